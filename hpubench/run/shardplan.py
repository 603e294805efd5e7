"""A planned run cut down to one shard (``hpubench run --shard K/N``): which cells, and the record of it.

Each cell's weight is its estimated time at a fixed *nominal* rate (NOMINAL_TFLOPS, NOMINAL_PER_OP_S), from
the model's FLOPs and operators counted on ``meta`` by the preflight probe: the estimator's own formula
(``hpubench.plan.cost``: fixed cost + first step + the other steps) with every calibrated or published
rate replaced by constants. Why not the estimate ``run`` prints: that one divides by a matmul rate timed on
this machine, which differs between the nodes of an array (and between two probes on one node), so two
tasks could compute different partitions (see ``hpubench.plan.shard``). The nominal figures rank cells the
way the real ones do within one precision (FLOPs and dispatch counts do not change between nodes); what
they cannot know is how much faster bf16 is than fp32 on a given device, so every precision is weighed at
one rate. A cell skipped here weighs nothing but still belongs to one shard, so the merged shards hold
its record as an unsharded run does. A cell the probe could not count weighs as an empty model.

Every shard's run directory records the whole partition (``meta.json`` "shard"), so ``results merge``
can tell which cells no input holds and whether the inputs computed the same partition.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hpubench.plan import shard as shard_mod
from hpubench.plan.cell import PlannedCell
from hpubench.plan.cost import Calibration, estimate_cell
from hpubench.plan.cost import fixed_s as estimate_fixed_s
from hpubench.precision.spec import DTYPES
from hpubench.run.preflight import Preflight, facts_key, model_facts

NOMINAL_TFLOPS = 1.0  # one rate for every dtype: a weight, not a prediction
NOMINAL_PER_OP_S = 20e-6
NOMINAL = Calibration(
    tflops=dict.fromkeys(DTYPES, NOMINAL_TFLOPS),  # every dtype a precision may declare
    per_op_s=NOMINAL_PER_OP_S,
    source="nominal rate (the same on every machine)",
)
BASIS = (
    f"FLOPs and operators counted on meta at a nominal {NOMINAL_TFLOPS:g} TFLOP/s and "
    f"{NOMINAL_PER_OP_S * 1e6:g} us/op (no calibration: every array task computes the same partition)"
)


def nominal_cost_ms(pc: PlannedCell, facts: dict[str, dict[str, Any]]) -> int:
    """A cell's weight in whole milliseconds of nominal time; 0 for a skipped cell."""
    if not pc.runnable:
        return 0
    c = pc.cell
    est = estimate_cell(
        precision=c.precision,
        mode=c.mode,
        world_size=c.world_size,
        ranks_sharing=1,
        facts=model_facts(facts.get(facts_key(pc))),
        calibration=NOMINAL,
        peak_tflops=None,
    )
    seconds = est.cell_time_s(c)
    if seconds is None:
        seconds = estimate_fixed_s(None, c.world_size)
    return max(1, round(seconds * 1000))


def apply(plan: Any, pre: Preflight, shard: shard_mod.Shard) -> tuple[Any, Preflight, dict[str, Any]]:
    """``plan`` and ``pre`` keeping only this shard's cells (in plan order), and the record of the
    partition for ``meta.json``."""
    keys = [pc.cell.key for pc in pre.cells]
    costs = [nominal_cost_ms(pc, pre.facts) for pc in pre.cells]
    shards = shard_mod.partition(list(zip(keys, costs, strict=True)), shard.count)
    mine = [i for i, s in enumerate(shards) if s == shard.index]
    loads = shard_mod.loads(costs, shards, shard.count)
    info = {
        "index": shard.index,
        "count": shard.count,
        "source": shard.source,
        "digest": shard_mod.digest(keys, shards, shard.count),
        "basis": BASIS if pre.facts else "cell count (no model facts: the estimate probe failed)",
        "cells": len(mine),
        "of_cells": len(keys),
        "nominal_s": round(loads[shard.index - 1] / 1000, 3),
        "nominal_s_per_shard": [round(v / 1000, 3) for v in loads],
        "partition": [[k, s] for k, s in zip(keys, shards, strict=True)],
    }
    cells = [pre.cells[i] for i in mine]
    new_pre = replace(pre, cells=cells, estimates=[pre.estimates[i] for i in mine])
    return replace(plan, cells=cells), new_pre, info


def describe(info: dict[str, Any]) -> str:
    """One line for the terminal: which shard, how many cells, how even the shares are."""
    per = info["nominal_s_per_shard"]
    spread = f"{min(per):.1f}-{max(per):.1f}" if per else "0"
    return (
        f"shard {info['index']}/{info['count']} ({info['source']}): {info['cells']} of {info['of_cells']} "
        f"cells, nominal {info['nominal_s']:.1f} s of {sum(per):.1f} s (shares {spread} s; weighed by "
        f"{'cell count' if info['basis'].startswith('cell count') else 'FLOPs at a nominal rate'}); "
        "merge the shards with: hpubench results merge DIR... -o DIR"
    )
