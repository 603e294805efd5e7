"""A third-party precision is one installed package (issue 13, item 4): its ``Precision`` declaration
(``hpubench.precisions`` entry point) names the function that applies it, and the real CLI plans, runs
and records it like a built-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.pluginsite import install

PLUGIN = '''
import contextlib

import torch

from hpubench.precision.apply import PreparedPrecision
from hpubench.precision.spec import Precision


def apply(model, acc):
    """bf16 parameters and math, as a vendor's own precision would be written."""
    return PreparedPrecision(
        model.to(torch.bfloat16), contextlib.nullcontext, None, torch.bfloat16, {"params": "bf16 (plugin)"}
    )


BF16_PLAIN = Precision("bf16-plain", "bf16 everything", "bf16", "bf16", 2, False, "tinyprec:apply")
'''


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    return install(
        tmp_path / "site", "tinyprec", PLUGIN, "hpubench.precisions", "bf16-plain = tinyprec:BF16_PLAIN"
    )


def test_an_installed_precision_is_planned_run_and_recorded(cli, plugin_env, tmp_path):
    out = tmp_path / "run"
    args = ("run", "-w", "mlp", "-p", "bf16-plain", "--steps", "5", "--no-telemetry", "-o", str(out))
    run = cli(*args, cwd=tmp_path, env=plugin_env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (record,) = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    assert record["status"] == "ok" and record["cell"]["precision"] == "bf16-plain"
    assert record["runtime"]["precision"] == {"params": "bf16 (plugin)"}  # the plugin's function ran
    shown = cli("results", str(out), cwd=tmp_path, env=plugin_env)
    assert shown.returncode == 0 and "bf16-plain" in shown.stdout


def test_without_the_package_the_precision_is_refused_in_one_line(cli, tmp_path):
    proc = cli("list", "cells", "-w", "mlp", "-p", "bf16-plain", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "bf16-plain" in proc.stderr and "32-true" in proc.stderr  # names the valid ones
