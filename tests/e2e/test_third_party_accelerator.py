"""A third-party accelerator is one installed package (issue 13, item 4): advertised under the
``hpubench.accelerators`` entry-point group, it is detected, planned, run and recorded like a built-in.

The package is installed as pip lays one out (a module and its ``.dist-info`` on the path) and every
command is the real CLI in a subprocess. The tiny accelerator reuses the CPU implementation under its own
name, so its cells really train.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.pluginsite import install

PLUGIN = '''
from hpubench.accelerators.cpu import CPUAccelerator


class TinyAccelerator(CPUAccelerator):
    """The CPU under another name: what a vendor package would subclass from Accelerator."""

    name = "tinyacc"
    auto_priority = -1  # never chosen by "auto" over the built-ins
'''


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "tinyacc.py").write_text(PLUGIN)
    return install(site, "tinyacc", None, "hpubench.accelerators", "tinyacc = tinyacc:TinyAccelerator")


def test_an_installed_accelerator_is_detected_planned_and_run(cli, plugin_env, tmp_path):
    env = cli("env", cwd=tmp_path, env=plugin_env)
    assert env.returncode == 0, env.stderr
    assert "tinyacc" in env.stdout
    listed = cli("list", "cells", "-w", "mlp", "-a", "tinyacc", cwd=tmp_path, env=plugin_env)
    assert listed.returncode == 0, listed.stderr
    assert "mlp/tiny/tinyacc/1x1/32-true/eager/nographs/bsdefault" in listed.stdout
    out = tmp_path / "run"
    args = ("run", "-w", "mlp", "-a", "tinyacc", "--steps", "5", "--no-telemetry", "-o", str(out))
    run = cli(*args, cwd=tmp_path, env=plugin_env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (record,) = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    assert record["status"] == "ok" and record["cell"]["accelerator"] == "tinyacc"
    assert record["runtime"]["accelerator"] == "tinyacc" and record["metrics"]["samples_per_s"] > 0


def test_without_the_package_the_name_is_unknown(cli, tmp_path):
    proc = cli("list", "cells", "-w", "mlp", "-a", "tinyacc", cwd=tmp_path)
    assert proc.returncode == 2 and "tinyacc" in proc.stderr and "Traceback" not in proc.stderr


def test_a_broken_accelerator_package_is_one_line(cli, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "brokenacc.py").write_text("raise RuntimeError('vendor library missing')\n")
    env = install(site, "brokenacc", None, "hpubench.accelerators", "brokenacc = brokenacc:Nothing")
    proc = cli("list", "cells", "-w", "mlp", cwd=tmp_path, env=env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "accelerator entry point 'brokenacc'" in err and "vendor library missing" in err
