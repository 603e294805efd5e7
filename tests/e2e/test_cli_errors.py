"""Bad input: one line naming the problem and the fix, exit code 2, no traceback, nothing lost."""

from __future__ import annotations

import json

import pytest

BROKEN_WORKLOAD = "import nothing_here_at_all\n"


def assert_one_line_error(proc, fragment: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error: ")
    assert fragment in err, err


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["run", "--precision", "fp64"], "--precision 'fp64'"),
        (["run", "--mode", "jit"], "--mode 'jit'"),
        (["run", "--devices", "two"], "--devices"),
        (["run", "--steps", "1"], "--steps must be at least 2"),
        (["run", "--timeout", "-5"], "--timeout must be positive"),
        (["run", "--matrix", "nightly"], "unknown matrix 'nightly'"),
        (["run", "--matrix", "no/such/file.toml"], "does not exist"),
        (["run", "--workloads-from", "missing_workloads.py"], "does not exist"),
        (["run", "--workload", "nosuchworkload"], "nosuchworkload"),
        (["run", "--no-such-flag"], "--no-such-flag"),
        (["run", "--no-such-flag"], "see 'hpubench run --help'"),  # not 'hpubench -m hpubench run'
        (["list", "cells", "--bogus"], "see 'hpubench list cells --help'"),
        (["results", "no_such_run_dir"], "no_such_run_dir"),
        (["results", ".", "--format", "xml"], "--format"),
        (["frobnicate"], "frobnicate"),
    ],
)
def test_bad_arguments(cli, tmp_path, args, fragment):
    assert_one_line_error(cli(*args, cwd=tmp_path), fragment)


def test_version_and_help_name_the_program_as_users_type_it(cli, tmp_path):
    from hpubench import __version__

    proc = cli("--version", cwd=tmp_path)
    assert (proc.returncode, proc.stdout.strip()) == (0, f"hpubench {__version__}")
    helped = cli("run", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: hpubench run [OPTIONS]")
    assert "<bool>" not in helped.stdout  # flags are shown by name, not typed
    assert max(map(len, helped.stdout.splitlines())) <= 80


def test_broken_matrix_file(cli, tmp_path):
    (tmp_path / "m.toml").write_text('workload = ["mlp"\nsize = "tiny"\n')
    assert_one_line_error(cli("list", "cells", "--matrix", "m.toml", cwd=tmp_path), "m.toml")
    (tmp_path / "m2.toml").write_text('workload = "mlp"\nprecison = "bf16-mixed"\n')
    assert_one_line_error(cli("run", "--matrix", "m2.toml", cwd=tmp_path), "precison")


def test_broken_workload_file(cli, tmp_path):
    (tmp_path / "wl.py").write_text(BROKEN_WORKLOAD)
    assert_one_line_error(cli("run", "--workloads-from", "wl.py", cwd=tmp_path), "wl.py")


@pytest.mark.parametrize("var", ["LOWER_LIST", "PT_HPU_AUTOCAST_FP32_OPS_LIST"])
def test_bad_hpu_op_list_variable(cli, tmp_path, var):
    proc = cli("run", "-w", "mlp", cwd=tmp_path, env={var: str(tmp_path / "missing_ops.txt")})
    assert_one_line_error(proc, var)


def test_corrupt_result_file(cli, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "cells.jsonl").write_text('{"schema": 1}\nnot json at all\n{"x": 1}\n')
    assert_one_line_error(cli("results", str(run)), "cells.jsonl")


def test_existing_run_is_never_overwritten(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli("run", "-w", "mlp", "--steps", "2", "--warmup-steps", "1", "-o", str(run))
    assert proc.returncode == 0, proc.stderr
    before = (run / "cells.jsonl").read_bytes()
    meta_before = (run / "meta.json").read_bytes()
    assert_one_line_error(cli("run", "-w", "mlp", "-o", str(run)), "--resume")
    assert (run / "cells.jsonl").read_bytes() == before
    assert (run / "meta.json").read_bytes() == meta_before
    assert json.loads(before.decode().splitlines()[0])["status"] == "ok"
