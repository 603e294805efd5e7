"""Sharding for real: one matrix run whole and as three shards (one numbered by --shard, one by a Slurm job
array's environment, one by a Kubernetes Indexed Job pod's), the shards merged, and the merged directory
read by report, compare and gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpubench.store.readback import load_results

MATRIX = ("-w", "mlp,gpt", "--precision", "32-true,bf16-mixed", "--steps", "3", "--no-telemetry")
NO_SLURM = {"SLURM_ARRAY_TASK_ID": "", "SLURM_ARRAY_TASK_COUNT": "", "JOB_COMPLETION_INDEX": ""}


def _keys(run: Path) -> list[str]:
    return sorted(r.key for r in load_results([str(run)]))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    from conftest import run_cli

    root = tmp_path_factory.mktemp("shards")
    whole = run_cli("run", *MATRIX, "-o", str(root / "whole"), env=NO_SLURM)
    assert whole.returncode == 0, whole.stderr
    p = run_cli("run", *MATRIX, "--shard", "1/3", "-o", str(root / "s1"), env=NO_SLURM)
    assert p.returncode == 0, p.stderr
    assert "shard 1/3 (--shard)" in p.stderr
    pod = {**NO_SLURM, "JOB_COMPLETION_INDEX": "2", "HPUBENCH_SHARD_COUNT": "3"}  # the third pod: shard 3
    p = run_cli("run", *MATRIX, "-o", str(root / "s3"), env=pod)
    assert p.returncode == 0, p.stderr
    assert "shard 3/3 (JOB_COMPLETION_INDEX=2 of 3)" in p.stderr
    slurm = {"SLURM_ARRAY_TASK_ID": "11", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "10"}
    p = run_cli("run", *MATRIX, "-o", str(root / "s2"), env={**slurm, "JOB_COMPLETION_INDEX": ""})  # shard 2
    assert p.returncode == 0, p.stderr
    assert "shard 2/3 (SLURM_ARRAY_TASK_ID=11 of 10-12)" in p.stderr
    return root


def test_three_shards_merged_equal_the_whole_run(runs: Path, cli) -> None:
    shards = [runs / f"s{k}" for k in (1, 2, 3)]
    metas = [json.loads((s / "meta.json").read_text())["shard"] for s in shards]
    assert len({m["digest"] for m in metas}) == 1  # every task computed the same partition
    per_shard = [_keys(s) for s in shards]
    assert all(per_shard), per_shard  # 4 cells into 3 shards: none is empty
    assert sum(len(k) for k in per_shard) == 4
    assert len(set().union(*per_shard)) == 4  # disjoint
    assert [m["cells"] for m in metas] == [len(k) for k in per_shard]
    loads = metas[0]["nominal_s_per_shard"]
    assert max(loads) <= 2.2 * min(loads)  # 4 near-equal cells in 3 shards: 2 + 1 + 1

    merged = runs / "merged"
    p = cli("results", "merge", *map(str, shards), "-o", str(merged))
    assert p.returncode == 0, p.stderr
    assert "4 record(s) of 4 cell(s)" in p.stdout
    assert _keys(merged) == _keys(runs / "whole")
    assert not p.stderr.strip(), p.stderr  # no coverage note: every shard and cell is there
    meta = json.loads((merged / "meta.json").read_text())
    assert [s["meta"]["shard"]["index"] for s in meta["merged"]["sources"]] == [1, 2, 3]
    assert meta["merged"]["hosts"] and meta["hostname"]
    assert (merged / "logs").is_dir() and len(list((merged / "logs").iterdir())) == 4

    again = cli("results", "merge", *map(str, shards), "-o", str(merged))
    assert again.returncode == 2 and "already holds a run" in again.stderr

    conflict = cli("results", "merge", str(runs / "s1"), str(runs / "whole"), "-o", str(runs / "bad"))
    assert conflict.returncode == 2
    assert "has different records in" in conflict.stderr and _keys(runs / "s1")[0] in conflict.stderr
    assert not (runs / "bad").exists()


def test_report_compare_and_gate_read_the_merged_directory(runs: Path, cli) -> None:
    merged = runs / "merged"
    if not merged.exists():
        p = cli("results", "merge", *(str(runs / f"s{k}") for k in (1, 2, 3)), "-o", str(merged))
        assert p.returncode == 0, p.stderr
    out = runs.parent / f"{runs.name}-pages"
    out.mkdir(exist_ok=True)
    rep = cli("report", str(merged), "-o", str(out / "merged.html"))
    assert rep.returncode == 0, rep.stderr
    assert "4 measured" in rep.stderr
    cmp_ = cli("compare", str(runs / "whole"), str(merged), "-o", str(out / "cmp.html"))
    assert cmp_.returncode == 0, cmp_.stderr
    gate = cli("gate", "-b", str(runs / "whole"), "-c", str(merged))
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "4 cells" in gate.stderr
    shown = cli("results", str(merged), "--format", "csv")
    assert shown.returncode == 0 and shown.stdout.count("\n") == 5
