"""The numerics of a cell of several ranks: every rank's first losses against a one-device replay of the
data-parallel step.

Each rank trains on its own batches (generator seed + rank, ``hpubench.run.cellrun.resolve``). DDP and
FSDP average the ranks' gradients and start from the same weights (DDP broadcasts rank 0's; every rank
seeds the same before building), so one step of W ranks is one device's step whose loss is the mean of
the W ranks' losses, each on its own batch. The reference replays exactly that on one device at 32-true,
eager (``reference.RankMean`` over the ranks' batches concatenated), and the cell's loss at a step is the
mean of its ranks' losses there. Taking the mean per rank slice rather than one loss over the global batch
keeps it exact for any reduction (bert's token mean over a varying count of masked tokens, a plugin's
sum) and for per-rank batch statistics (BatchNorm normalises each rank's batch on its own).

What one device cannot replay stays ``unchecked`` with the reason (:func:`why_unchecked`): ranks of
unequal batch sizes or step counts, data the seed does not fix, dropout (every rank seeds the same, so the
ranks draw the same masks, which one device drawing in sequence does not), and SyncBatchNorm (statistics
over all ranks). The harness has no gradient accumulation, so none needs excluding.

Only rank 0 computes (and caches) the reference, after every collective of the cell; the others wait in
the gather that hands rank 0's facts to every rank, so all ranks write the same verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from hpubench.run.cellrun import reference
from hpubench.run.cellrun.resolve import Resolved
from hpubench.store.layout import references_dir_of


@dataclass(frozen=True)
class RankLosses:
    """What one rank says of its steps for the verdict: its first losses, its batch size, whether a second
    draw from its seed is exactly what it trained on, and what in its model one device cannot replay."""

    rank: int
    losses: tuple[float, ...]
    batch_size: int
    reproducible: bool
    obstacle: str | None = None


def model_obstacle(model: nn.Module) -> str | None:
    """What in ``model`` makes a W-rank step differ from its one-device replay, or None."""
    for name, module in model.named_modules():
        if isinstance(module, nn.SyncBatchNorm):
            return f"SyncBatchNorm ({name or 'the model'}) normalises over every rank's batch at once"
        p = getattr(module, "p", 0.0)
        if isinstance(module, nn.modules.dropout._DropoutNd) and p > 0:
            return (
                f"dropout (p={p:g} at {name or 'the model'}): every rank draws the same masks, one device "
                "replaying them draws others"
            )
    return None


def why_unchecked(ranks: Sequence[RankLosses], data_from_seed: bool, workload: str) -> str | None:
    """Why a W-rank cell cannot be checked against its one-device replay, or None where it can. Pure."""
    if not data_from_seed:
        return f"workload {workload} declares its data is not reproducible from the seed"
    sizes = sorted({r.batch_size for r in ranks})
    if len(sizes) > 1:
        return f"several ranks with unequal batch sizes ({sizes}): the ranks' mean loss is not the step's"
    obstacle = next((r.obstacle for r in ranks if r.obstacle), None)
    if obstacle:
        return f"several ranks: {obstacle}"
    stale = [r.rank for r in ranks if not r.reproducible]
    if stale:
        return f"the batches of rank(s) {stale} are not reproducible from the seed (a second draw differs)"
    return None


def mean_over_ranks(ranks: Sequence[RankLosses]) -> tuple[float, ...]:
    """Each step's mean over the ranks of their losses (the first steps every rank has): with equal batch
    sizes, the loss a data-parallel step minimises. A non-finite loss on any rank stays non-finite. Pure."""
    if not ranks:
        return ()
    n = min(len(r.losses) for r in ranks)
    return tuple(math.fsum(r.losses[i] for r in ranks) / len(ranks) for i in range(n))


def this_rank(resolved: Resolved, losses: Sequence[float]) -> RankLosses:
    """This rank's :class:`RankLosses`; a draw that fails reads as not reproducible."""
    rank = resolved.strategy.rank
    try:
        drawn = reference.draw(resolved.workload, resolved, rank)
        reproducible = reference.same_batches(drawn, resolved)
    except Exception:  # the verdict's business, never the cell's failure
        reproducible = False
    obstacle = model_obstacle(resolved.model)
    return RankLosses(rank, tuple(float(x) for x in losses), resolved.batch_size, reproducible, obstacle)


def rank0_facts(resolved: Resolved, ranks: Sequence[RankLosses], progress_path: str | None) -> dict[str, Any]:
    """Rank 0's ``runtime["numerics"]`` from every rank's losses: the one-device replay's, found in the run
    directory or computed here; never raises."""
    losses = mean_over_ranks(ranks)
    workload = resolved.workload
    data_from_seed = bool(getattr(workload, "data_from_seed", True))
    why = why_unchecked(ranks, data_from_seed, resolved.cell.workload)
    extra = {"ranks": len(ranks)}
    if why:
        return {**reference.runtime_numerics(losses, None, why), **extra}
    world = len(ranks)
    key = reference.reference_key(resolved, world)
    cache_dir = references_dir_of(Path(progress_path)) if progress_path else None
    try:
        drawn = reference.concat_ranks([reference.draw(workload, resolved, r) for r in range(world)])
        ref = reference.read_cached(cache_dir, key)
        if ref is None:
            ref = reference.computed(resolved, key, drawn, cache_dir, world)
        return {**reference.against(losses, ref, drawn), **extra}
    except Exception as exc:  # the reference must never fail the cell
        why = f"no reference: {type(exc).__name__}: {exc}"[:300]
        return {**reference.runtime_numerics(losses, None, why), **extra}


def multi_rank_numerics(
    resolved: Resolved, losses: Sequence[float], progress_path: str | None
) -> dict[str, Any]:
    """``runtime["numerics"]`` of a W-rank cell, the same on every rank. Collective: every rank calls it
    once, after the cell's other collectives; rank 0 computes the reference between the two gathers while
    the others wait in the second (well inside the process group's timeout: a few eager steps)."""
    strategy = resolved.strategy
    ranks = strategy.gather(this_rank(resolved, losses))
    facts = rank0_facts(resolved, ranks, progress_path) if strategy.rank == 0 else None
    return strategy.from_rank0(facts)
