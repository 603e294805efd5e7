"""A third-party strategy is one installed package (issue 32, item 2): one module holding a ``Strategy``
subclass and its ``StrategySpec``, advertised under the ``hpubench.strategies`` entry-point group. With no
other change the real CLI names it in ``--help``, takes it on ``--strategy``, plans it with its own key
and runs it on 2 CPU ranks (gloo, torch's elastic launch) through the same worker as ddp; without the
package the name is refused in one line.

The package is "installed" the way pip leaves one: a module and its ``.dist-info`` (METADATA and
entry_points.txt) on the PYTHONPATH of a real ``python -m hpubench`` subprocess (and so of its ranks).
The module imports torch at its top, the hardest case: the planning process then loads the runtime too.
A package that wants a torch-free plan keeps the ``StrategySpec`` in a module of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.pluginsite import install

PLUGIN = '''
from hpubench.strategy.runtime import DDP
from hpubench.strategy.spec import StrategySpec


class SmallBucketDDP(DDP):
    """DDP with 1 MiB gradient buckets, the gradients viewed in them (a vendor's tuned data parallel)."""

    def ddp_options(self):
        return {"bucket_cap_mb": 1, "gradient_as_bucket_view": True}

    def facts(self):
        return {**super().facts(), "smallbucket": "set by the plugin"}


DDP_SMALL = StrategySpec(
    "ddp_small",
    "DDP with 1 MiB gradient buckets (a test plugin)",
    "smallbucket:SmallBucketDDP",
    refuses=(("bf16-true", "ddp_small does not run bf16-true (a test plugin's refusal)"),),
)
'''
KEY = "mlp/tiny/cpu/2x1/32-true/eager/nographs/bsdefault/strategy=ddp_small"


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    env = install(
        tmp_path / "site", "smallbucket", PLUGIN, "hpubench.strategies", "ddp_small = smallbucket:DDP_SMALL"
    )
    return {**env, "XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_list_cells_and_help_show_the_installed_strategy(cli, plugin_env, tmp_path):
    args = ("list", "cells", "-w", "mlp", "-a", "cpu", "--devices", "2", "-p", "32-true,bf16-true")
    proc = cli(*args, "--strategy", "ddp,ddp_small", cwd=tmp_path, env={**plugin_env, "COLUMNS": "250"})
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert KEY in text and "ddp_small does not run bf16-true (a test plugin's refusal)" in text
    assert "3 to run, 1 skipped" in text
    helped = cli("run", "--help", cwd=tmp_path, env={**plugin_env, "COLUMNS": "200"})
    assert helped.returncode == 0, helped.stderr
    assert "ddp_small (DDP with 1 MiB gradient buckets (a test plugin))" in " ".join(helped.stdout.split())


@pytest.mark.slow
def test_the_installed_strategy_runs_on_two_cpu_ranks(cli, plugin_env, tmp_path):
    out = tmp_path / "run"
    args = ("run", "-w", "mlp", "--size", "tiny", "-a", "cpu", "--devices", "2", "--strategy", "ddp_small")
    env = {**plugin_env, "HPUBENCH_DDP_CHECK": "1"}  # every rank records evidence of one shared model
    proc = cli(*args, "--steps", "4", "--warmup-steps", "2", "--no-telemetry", "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (record,) = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    assert record["key"] == KEY and record["status"] == "ok", record.get("reason")
    runtime = record["runtime"]
    assert (runtime["strategy"], runtime["world_size"]) == ("ddp_small", 2)  # the plugin's strategy ran
    dist = runtime["distributed"]
    assert dist["backend"] == "gloo" and dist["world_size"] == 2
    assert dist["ddp_options"] == {"bucket_cap_mb": 1, "gradient_as_bucket_view": True}
    assert dist["smallbucket"] == "set by the plugin"  # a fact only the plugin's class sets
    checks = dist["replica_check"]  # DDP's own check, inherited: the two ranks train one model
    assert [c["rank"] for c in checks] == [0, 1] and len({c["param_digest"] for c in checks}) == 1
    assert checks[0]["local_grad"] != checks[1]["local_grad"]
    shown = cli("results", str(out), cwd=tmp_path, env={**plugin_env, "COLUMNS": "250"})
    assert shown.returncode == 0 and "strategy=ddp_small" in shown.stdout, shown.stderr


def test_without_the_package_the_strategy_is_refused_in_one_line(cli, tmp_path):
    proc = cli(
        "list", "cells", "-w", "mlp", "-a", "cpu", "--devices", "2", "--strategy", "ddp_small", cwd=tmp_path
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "--strategy 'ddp_small': unknown strategy; valid: single, ddp, fsdp, auto" in line


def test_a_broken_strategy_package_is_one_line_naming_it(cli, plugin_env, tmp_path):
    info = tmp_path / "site" / "smallbucket-0.1.dist-info" / "entry_points.txt"
    info.write_text("[hpubench.strategies]\nddp_small = smallbucket:NO_SUCH_NAME\n")
    proc = cli("list", "cells", "-w", "mlp", "-a", "cpu", "--devices", "2", cwd=tmp_path, env=plugin_env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "strategy entry point 'ddp_small' (smallbucket:NO_SUCH_NAME) failed to load" in line
