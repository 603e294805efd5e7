"""Merging run directories (hpubench.store.merge): duplicates kept once, conflicts refused naming the cell,
every host's metadata kept, and the shards' partitions checked for cells no input holds."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from gatedata import make_result

from hpubench.errors import UsageError
from hpubench.plan.cell import Cell
from hpubench.store.merge import Source, combine

A = Cell("mlp", "tiny", "cpu", precision="32-true", steps=5)
B = Cell("gpt", "tiny", "cpu", precision="32-true", steps=5)
C = Cell("gpt", "tiny", "cpu", precision="bf16-mixed", steps=5)


def _rec(cell: Cell, step: float = 0.01, repeat: int = 0):
    return make_result(cell, np.full(5, step), repeat=repeat)


def _meta(host: str, index: int | None = None, partition=None, commit: str = "abc") -> dict:
    started = f"2024-01-0{index or 1}T00:00:00+00:00"
    meta = {"hostname": host, "started_at": started, "git": {"commit": commit}}
    if index is not None:
        meta["shard"] = {"index": index, "count": 3, "digest": "d1", "partition": partition}
    return meta


PARTITION = [[A.key, 1], [B.key, 2], [C.key, 3]]


def test_shards_merge_into_one_run_with_every_host() -> None:
    sources = [
        Source("s1", _meta("node1", 1, PARTITION), (_rec(A),)),
        Source("s2", _meta("node2", 2, PARTITION), (_rec(B),)),
        Source("s3", _meta("node3", 3, PARTITION), (_rec(C),)),
    ]
    m = combine(sources, ["hpubench", "results", "merge"], "2024-02-01T00:00:00+00:00")
    assert [r.key for r in m.records] == [A.key, B.key, C.key]
    assert m.origins == (0, 1, 2)
    assert m.notes == ()
    assert m.meta["hostname"] == "node1, node2, node3"
    assert m.meta["merged"]["hosts"] == ["node1", "node2", "node3"]
    assert [s["meta"]["shard"]["index"] for s in m.meta["merged"]["sources"]] == [1, 2, 3]
    assert "shard" not in m.meta
    assert m.meta["started_at"] == "2024-01-01T00:00:00+00:00"


def test_identical_duplicates_are_kept_once() -> None:
    same = _rec(A)
    m = combine([Source("s1", None, (same, _rec(B))), Source("s1 again", None, (same,))], [], "t")
    assert [r.key for r in m.records] == [A.key, B.key]
    assert m.duplicates == 1


def test_conflicting_records_are_refused_naming_the_cell() -> None:
    with pytest.raises(UsageError, match=rf"{A.key} has different records in s1 and s2"):
        combine([Source("s1", None, (_rec(A, 0.01),)), Source("s2", None, (_rec(A, 0.02),))], [], "t")


def test_repeats_of_one_cell_are_distinct_records() -> None:
    m = combine([Source("s1", None, (_rec(A, repeat=0),)), Source("s2", None, (_rec(A, repeat=1),))], [], "t")
    assert [r.repeat for r in m.records] == [0, 1]
    with pytest.raises(UsageError, match="repeat 1"):
        combine([Source("s1", None, (_rec(A, 0.01, 1),)), Source("s2", None, (_rec(A, 0.03, 1),))], [], "t")


def test_a_missing_shard_and_a_cell_cut_short_are_noted() -> None:
    sources = [
        Source("s1", _meta("n1", 1, PARTITION), ()),  # its one cell never recorded
        Source("s2", _meta("n2", 2, PARTITION), (_rec(B),)),
    ]
    notes = combine(sources, [], "t").notes
    assert any("3/3 not among the inputs" in n for n in notes)
    assert any("1 cell(s) of the given shards have no record" in n and A.key in n for n in notes)


def test_different_partitions_and_commits_are_noted() -> None:
    other = _meta("n2", 2, PARTITION, commit="def")
    other["shard"] = {**other["shard"], "digest": "d2"}
    sources = [Source("s1", _meta("n1", 1, PARTITION), (_rec(A),)), Source("s2", other, (_rec(B),))]
    notes = combine(sources, [], "t").notes
    assert any("different partitions" in n for n in notes)
    assert any("2 different git commits" in n for n in notes)


def test_a_merged_directory_merged_again_keeps_its_hosts() -> None:
    first = combine([Source("a", _meta("n1"), (_rec(A),)), Source("b", _meta("n2"), (_rec(B),))], [], "t")
    again = combine([Source("m", first.meta, first.records), Source("c", _meta("n3"), (_rec(C),))], [], "t")
    assert again.meta["merged"]["hosts"] == ["n1", "n2", "n3"]


def test_nothing_to_merge_is_refused() -> None:
    with pytest.raises(UsageError, match="at least one"):
        combine([], [], "t")


def test_records_keep_what_they_hold() -> None:
    rec = replace(_rec(A), reason="kept as is")
    assert combine([Source("s", None, (rec,))], [], "t").records == (rec,)
