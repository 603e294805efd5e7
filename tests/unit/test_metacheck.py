"""hpubench.store.metacheck: the meta.json fields readers use have their types checked, and a meta as
``run`` and ``baseline save`` write it passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpubench.store.metacheck import MetaError, check_meta
from hpubench.store.runmeta import run_metadata

V1_META = Path(__file__).resolve().parents[1] / "data" / "v1_run" / "meta.json"


def test_metas_hpubench_writes_pass() -> None:
    check_meta(run_metadata(argv=["hpubench", "run"], cwd="."))
    check_meta(json.loads(V1_META.read_text()))
    check_meta({})
    check_meta(
        {
            "baseline": {"name": "main", "saved_at": "2026-11-29T00:00:00Z", "source": "/r", "note": None},
            "run_to_run": {"mlp/tiny": {"runs": 3, "median": 0.02, "mean": 0.0}},
            "shard": {"index": 1, "count": 2, "digest": "ab", "partition": [["mlp/tiny", 1]], "basis": "x"},
            "merged": {"merged_at": "t", "hosts": ["a", "b"], "sources": [{"path": "a", "meta": None}]},
            "a_newer_field": {"kept": ["as", "written"]},
        }
    )


@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"git": "abc"}, "git"),
        ({"git": {"commit": 5}}, "git.commit"),
        ({"git": {"branch": ["main"]}}, "git.branch"),
        ({"git": {"dirty": "yes"}}, "git.dirty"),
        ({"started_at": 5}, "started_at"),
        ({"hostname": ["a"]}, "hostname"),
        ({"cpu_count": 0}, "cpu_count"),
        ({"cpu_count": True}, "cpu_count"),
        ({"command_line": "run"}, "command_line"),
        ({"command_line": ["run", 3]}, "command_line"),
        ({"inventory": [1]}, "inventory"),
        ({"baseline": "main"}, "baseline"),
        ({"baseline": {"saved_at": 4}}, "baseline.saved_at"),
        ({"run_to_run": [1]}, "run_to_run"),
        ({"run_to_run": {"k": 0.1}}, "run_to_run['k']"),
        ({"run_to_run": {"k": {"runs": 2.5}}}, "run_to_run['k'].runs"),
        ({"run_to_run": {"k": {"runs": 3, "median": float("nan")}}}, "run_to_run['k'].median"),
        ({"run_to_run": {"k": {"runs": 3, "median": -0.1}}}, "run_to_run['k'].median"),
        ({"shard": {"count": 0}}, "shard.count"),
        ({"shard": {"digest": 7}}, "shard.digest"),
        ({"shard": {"partition": [["k", "1"]]}}, "shard.partition"),
        ({"shard": {"partition": [["k", 1, 2]]}}, "shard.partition"),
        ({"merged": {"hosts": "a"}}, "merged.hosts"),
        ({"merged": {"sources": ["a"]}}, "merged.sources"),
    ],
)
def test_wrong_types_name_their_field(meta: dict, field: str) -> None:
    with pytest.raises(MetaError) as caught:
        check_meta(meta)
    assert caught.value.field == field
