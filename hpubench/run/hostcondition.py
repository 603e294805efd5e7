"""The host condition a cell measures under (the ``condition`` dimension): the harness's tuned settings, or
those a plain training script gets.

Why both: the tuned heap and thread policies make run-to-run figures steady, but a user's own script runs
with glibc's own heap and torch's default threads in a fresh interpreter, and its speed can differ from
the tuned figure in either direction. A ``plain`` cell runs that way, so the two figures can be set side
by side (``hpubench.analysis.tuning``). Nothing here is measured; it only says how a cell's process starts.
"""

from __future__ import annotations

from typing import Any

from hpubench.measure.conditions import THREADS_ENV
from hpubench.measure.heap import HEAP_ENV
from hpubench.plan.cell import Cell
from hpubench.plan.dimensions import PLAIN, TUNED

# What a plain script's process has: glibc's own heap thresholds and torch's own thread count (one
# intra-op thread per core of the affinity). A user's MALLOC_* or OMP_NUM_THREADS still win, as they
# would in their script.
PLAIN_ENV = {HEAP_ENV: "system", THREADS_ENV: "all"}

WHAT = {
    TUNED: "the harness's quiet host settings (heap thresholds held, threads by HPUBENCH_CPU_THREADS), "
    "in a process forked from a pre-warmed server: steady run to run, not what a plain script gets",
    PLAIN: "what a plain training script gets: glibc's own heap, torch's default threads, a fresh "
    "interpreter per cell",
}


def condition_of(cell: Cell) -> str:
    """The cell's host condition (records written before the dimension existed read as tuned)."""
    return str(cell.value("condition"))


def needs_fresh_process(cell: Cell) -> bool:
    """A plain cell starts its own interpreter: a child forked from the pre-warmed server would inherit
    the server's heap, which a user's script does not have."""
    return condition_of(cell) == PLAIN


def condition_env(cell: Cell) -> dict[str, str]:
    """The environment variables the cell's processes start with for its condition (none when tuned:
    the run's own HPUBENCH_MALLOC and HPUBENCH_CPU_THREADS apply)."""
    return dict(PLAIN_ENV) if condition_of(cell) == PLAIN else {}


# Set by the fresh-interpreter entry point (``forkserver.child.run_once``) before the cell runs; a child
# forked from the pre-warmed server never sets it.
_PROCESS = {"kind": "forked from the pre-warmed server"}


def note_fresh_interpreter() -> None:
    """This process is a fresh interpreter running one cell: its record says so."""
    _PROCESS["kind"] = "fresh interpreter"


def condition_facts(cell: Cell) -> dict[str, Any]:
    """``runtime["condition"]``: which condition the figure was measured under, in words, and what kind of
    process measured it (a plain cell must be a fresh interpreter; a distributed cell's ranks always are)."""
    name = condition_of(cell)
    kind = "fresh interpreter (torch's elastic agent)" if cell.world_size > 1 else _PROCESS["kind"]
    return {"name": name, "what": WHAT.get(name, name), "process": kind}
