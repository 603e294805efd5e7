"""Skip reasons counted (issue 15: `list cells --matrix full` listed 177 skipped cells with no summary)."""

from __future__ import annotations

from hpubench.present.skipsummary import group_skips, summary_lines

LAZY = "lazy mode exists only on HPU, not on cpu"
MEM_A = "needs ~30.5 GiB per device, 22.3 GiB available"
MEM_B = "needs ~61 GiB per device, 22.3 GiB available"


def test_counts_each_reason_largest_first() -> None:
    groups = group_skips([LAZY, MEM_A, LAZY, "graph capture is not available on cpu", LAZY])
    assert [(g.count, g.reason) for g in groups][:2] == [(3, LAZY), (1, MEM_A)]


def test_reasons_differing_only_in_figures_are_one_group() -> None:
    (g,) = group_skips([MEM_A, MEM_B])
    assert (g.count, g.reason, g.varies) == (2, MEM_A, True)
    assert summary_lines([MEM_A, MEM_B, LAZY]) == [f"2 skipped: e.g. {MEM_A}", f"1 skipped: {LAZY}"]


def test_nothing_skipped_prints_nothing() -> None:
    assert summary_lines([]) == []
