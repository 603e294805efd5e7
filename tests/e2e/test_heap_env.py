"""A bad HPUBENCH_MALLOC stops ``list cells`` as it stops ``run`` (tests/badinput): one line, exit 2."""

from __future__ import annotations


def test_list_cells_refuses_a_bad_heap_policy_as_run_does(cli, tmp_path):
    proc = cli("list", "cells", "-w", "mlp", cwd=tmp_path, env={"HPUBENCH_MALLOC": "fixed"})
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "HPUBENCH_MALLOC='fixed'" in err and "steady, system" in err, err
