"""``hpubench doctor``'s judgment of the host's own steadiness (measured by ``hpubench.measure.steadiness``).
Pure: block rates in, a finding out.

The host is unsteady when a fixed piece of work, timed in short blocks, moves between its 10th and 90th
percentile block by more than twice the shift that makes a cell ``unstable``: two halves of a cell's window
on such a host will often differ by that shift whatever the cell does.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from hpubench.analysis.quality import UNSTABLE, UNSTABLE_MIN_SHIFT
from hpubench.measure.doctor import HOST, OK, WARN, Finding

UNSTEADY_SPAN = 2 * UNSTABLE_MIN_SHIFT  # p90 / p10 - 1 of the blocks' rates above this: an unsteady host
CHECK = "host speed"


def span(rates: Sequence[float]) -> tuple[float, float]:
    """The 10th and 90th percentile block rates, each as a share of the median block's."""
    mid = statistics.median(rates)
    deciles = statistics.quantiles(rates, n=10, method="inclusive")
    return deciles[0] / mid, deciles[-1] / mid


def judge(facts: Mapping[str, Any] | None) -> tuple[bool, str] | None:
    """(steady, what was measured in words) for the child's ``steadiness`` facts (``work``, ``block_s``,
    ``rates``); None when fewer than 5 blocks were timed."""
    rates = [float(r) for r in (facts or {}).get("rates", ()) if r > 0]
    if facts is None or len(rates) < 5:
        return None
    low, high = span(rates)
    what = (
        f"{facts['work']} ran at {low:.0%}-{high:.0%} of its median speed (10th-90th percentile) over "
        f"{len(rates)} blocks of {facts['block_s']:g} s"
    )
    return high / low - 1 <= UNSTEADY_SPAN, what


def steadiness_finding(facts: Mapping[str, Any] | None) -> Finding:
    """The doctor's finding for the host's steadiness facts, or why there is none."""
    judged = judge(facts)
    if judged is None:
        why = (facts or {}).get("error") or "not measured"
        return Finding(
            HOST, CHECK, WARN, f"not measured: {why}", "run hpubench doctor again; report it if this stays"
        )
    steady, what = judged
    if steady:
        return Finding(HOST, CHECK, OK, f"steady: {what}")
    return Finding(
        HOST,
        CHECK,
        WARN,
        f"{what}, with nothing of a cell running: this host's own speed moves by more than twice the "
        f"{UNSTABLE_MIN_SHIFT:.0%} by which a cell's halves may differ, so cells measured here will often be "
        "'unstable', and runs will differ, because of the host rather than the code",
        "benchmark on a dedicated or quieter host (a VM shares its CPUs with its neighbours); here, compare "
        "runs with --repeat and the gate's intervals rather than single figures",
    )


def unsteady_hint(verdicts: Sequence[str | None]) -> str | None:
    """A line for under a results table when at least half the measured figures (and two or more) are
    ``unstable``: then the host's own speed is the likelier cause, and doctor measures it. None otherwise."""
    judged = [v for v in verdicts if v is not None]
    n = sum(v == UNSTABLE for v in judged)
    if n < 2 or 2 * n < len(judged):
        return None
    return (
        f"{n} of {len(judged)} figures are unstable: when that many are, the host's own speed is usually "
        "moving; check it before trusting any of them: hpubench doctor (its 'host speed' line)"
    )
