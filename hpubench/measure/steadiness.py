"""How steady this host's own speed is: a fixed piece of work timed in short consecutive blocks, with
nothing of a cell running (``hpubench doctor``).

Why: a cell is ``unstable`` when its second half runs a few percent off its first. On a VM whose CPUs are
time-sliced among neighbours, the host's own speed moves by more than that from one fraction of a second to
the next, so the verdict (and the run-to-run spread) then describes the host, not the code under test. This
measures the host alone, so doctor can say so before a run. The timing loop is here; the work (a one-thread
matrix multiply) is given by the caller, which has torch.
"""

from __future__ import annotations

import time
from collections.abc import Callable

BLOCKS = 15
BLOCK_S = 0.2
CALLS_PER_CHECK = 10  # the clock is read once per this many calls, so reading it costs nothing measurable


def block_rates(
    work: Callable[[], object],
    blocks: int = BLOCKS,
    block_s: float = BLOCK_S,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """Calls of ``work`` per second in each of ``blocks`` consecutive blocks of at least ``block_s``."""
    rates: list[float] = []
    for _ in range(blocks):
        start, calls = clock(), 0
        while True:
            for _ in range(CALLS_PER_CHECK):
                work()
            calls += CALLS_PER_CHECK
            elapsed = clock() - start
            if elapsed >= block_s:
                break
        rates.append(calls / elapsed)
    return rates
