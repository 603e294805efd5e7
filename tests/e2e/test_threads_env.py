"""A bad HPUBENCH_CPU_THREADS stops ``hpubench run`` and ``list cells`` (whose estimates follow it) before
anything runs: one line, exit 2."""

from __future__ import annotations


def test_bad_thread_policy_is_one_line_exit_2(cli, tmp_path):
    proc = cli(
        "run", "-w", "mlp", "-o", str(tmp_path / "out"), cwd=tmp_path, env={"HPUBENCH_CPU_THREADS": "many"}
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "HPUBENCH_CPU_THREADS='many'" in err and "cores-1" in err, err
    assert not (tmp_path / "out").exists()  # refused before a run directory was made


def test_list_cells_refuses_a_bad_thread_policy_as_run_does(cli, tmp_path):
    proc = cli("list", "cells", "-w", "mlp", cwd=tmp_path, env={"HPUBENCH_CPU_THREADS": "many"})
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "HPUBENCH_CPU_THREADS='many'" in err and "cores-1" in err, err
