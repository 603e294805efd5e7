"""What a cell will cost before it runs: time (warm-up + measured steps + fixed cost) and memory per device.

Pure: no torch, no I/O. The facts come from ``hpubench.run.probe`` (a model counted on ``meta``, a matmul
timed on the device) or from earlier records of the same cell key; this module only does arithmetic,
and every estimate says which of those it came from.

Time, in order of preference:

1. **From earlier results** (``Measured``): the mean measured step, the first warm-up step (compilation,
   graph capture and allocator warm-up land there) and the fixed cost (the record's wall time minus its
   steps) of the same cell key. The best estimate there is, on the machine that made it.
2. **From FLOPs and a calibrated rate** (``Calibration``): ``step = (flops - conv) / (rate * efficiency) +
   conv / (conv_rate * efficiency) + ops * per_op_s``, with ``rate`` the TFLOP/s of a square linear-layer
   product at the precision's dtype timed on this device (``hpubench.run.probe``), ``conv_rate`` that
   of a convolution's forward + backward there (``conv`` the convolution FLOPs of the step; without a
   convolution rate they go at ``rate``), ``per_op_s`` the dispatch cost of a tiny op (what dominates
   small cells) and ``ops`` the operators of one step counted on meta. ``efficiency`` (MODEL_EFFICIENCY) is an
   assumption: whole models reach less than one large product.
3. **From FLOPs and the published peak** times ASSUMED_PEAK_EFFICIENCY, when there is no calibration.

Without any of them a cell has no time estimate (shown as "?"), never a made-up one.

Memory per device (bytes), from the parameter count P, the bytes autograd saves for backward A (counted
at fp32 on meta, attention counted as a fused kernel saves it) and one batch's bytes B::

    baseline (+ compile, + ranks) + P * (w + g + s * k + t) + A * a + N_BATCHES * B

``w``/``g``: bytes per weight/gradient (4, or 2 for bf16-true), ``k``: optimizer states per parameter
(AdamW 2, SGD with momentum 1: ``core.trainstep.make_optimizer``), ``s``: bytes per state (as weights),
``t``: transient weight-sized buffers (the foreach optimizer's temporaries; plus the low-precision weight
copies autocast caches under mixed precision; plus one gradient-sized DDP bucket copy with several
ranks), ``a``: the activation factor (1 at fp32, MIXED_ACTIVATION
under autocast, 0.5 at bf16-true), ``baseline``: the process or device context before any model exists.
The error of this formula against records measured here is in the README.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hpubench import numfmt
from hpubench.plan.autosteps import (
    LEAD_IN_STEPS,
    MAX_AUTO_STEPS,
    AutoSteps,
    compiled_warmup,
    warmup_extension,
)
from hpubench.plan.cell import Cell
from hpubench.precision import spec as precisions

GIB = 1024**3
# Headroom a memory estimate must leave: its worst under-estimate measured here was 8% (see
# memory_skip_reason).
MEMORY_MARGIN = 0.10
# Whole-model rate / the calibrated rate of its kind of operation: an assumption. Checked against the
# --matrix full --budget 60m run of 2026-11-26 on this project's 2-core Xeon (cores-1: one thread for a
# one-rank cell, one each for two ranks), re-estimated with the convolutions at their own rate and the
# rate per thread: measured / estimated step 0.55-1.44 (gpt 0.85-0.88, bert 0.55-0.94, mlp 0.6-1.44,
# resnet 32-true 0.87-1.25, resnet bf16-mixed 0.61-0.77). On an H200 (gpu-check, same day) gpt standard
# bf16 reached 160 TFLOP/s eager and 276 compiled against a bf16 product rate of ~790: 0.2-0.35.
MODEL_EFFICIENCY = 0.45
ASSUMED_PEAK_EFFICIENCY = 0.4  # achieved / published peak without a calibration: an assumption
FIRST_STEP_FACTOR = 2.0  # first warm-up step / steady step in eager: allocator, caches, lazy init
COMPILE_S_PER_OP = 0.05  # torch.compile's first step: seconds per operator of the step (inductor)
FIXED_S = 1.0  # per cell: fork or spawn, model build, batches, FLOP count
FIXED_S_PER_MPARAM = 0.02  # model build and initialisation per million parameters
MULTI_PROCESS_FIXED_S = 8.0  # a multi-process cell starts fresh interpreters (the elastic agent)
FRESH_PROCESS_S = 3.0  # a plain-condition cell's own interpreter: import torch and hpubench, no zygote
# A worker forked with torch loaded: its peak RSS on a model of almost nothing (mlp tiny) was 249-255 MiB
# here. On an accelerator this stands for the context and workspaces the allocator does not report.
BASELINE_BYTES = 256 * 1024**2
COMPILE_BYTES = 64 * 1024**2  # torch.compile's generated code and caches (mlp tiny compile: +62 MiB)
DIST_BYTES = 64 * 1024**2  # a rank's process group and DDP state (mlp tiny on 2 CPU ranks: +61 MiB)
MIXED_ACTIVATION = 0.6  # autocast saves matmul inputs in 16 bits, norms and losses in 32
N_BATCHES = 4  # hpubench.run.worker keeps this many distinct batches on the device
# The phase split (hpubench.measure.phases) runs after the measured steps: one untimed step, then the
# sampled ones. Every measured cell runs them, so its estimate counts them.
PHASE_SAMPLED_STEPS = 5
PHASE_EXTRA_STEPS = PHASE_SAMPLED_STEPS + 1

OPTIMIZER_STATES: dict[str, int] = {"adamw": 2, "adam": 2, "sgd": 1}


@dataclass(frozen=True)
class ModelFacts:
    """One (workload, size, batch) as counted on meta by ``hpubench.run.probe``."""

    params: int
    flops: int  # forward + backward FLOPs of one step, per device
    ops: int  # operators dispatched in one step
    activation_bytes_fp32: int  # bytes saved for backward, at fp32
    batch_bytes_fp32: int
    optimizer: str = "adamw"
    conv_flops: int = 0  # of ``flops``, those of convolutions (forward and backward)


@dataclass(frozen=True)
class Calibration:
    """This device's measured rates: ``tflops`` per dtype (square matmul), ``conv_tflops`` per dtype (a
    convolution's forward + backward; empty where not timed) and one tiny op's cost."""

    tflops: Mapping[str, float]
    per_op_s: float
    source: str  # e.g. "calibrated: 1024x1024 matmul on cpu"
    conv_tflops: Mapping[str, float] = field(default_factory=dict)
    # Host devices (CPU ranks on shared cores): the rates above are per thread, and each rank of an
    # n-rank cell gets rank_threads[n - 1] threads' worth. Empty: the rates are one device's.
    rank_threads: tuple[float, ...] = ()
    # The heap policy the rates were timed under (``runtime["heap"]`` of a record, same keys).
    heap: Mapping[str, Any] = field(default_factory=dict)

    def rank_share(self, ranks_sharing: int) -> float:
        """The multiple of the calibrated rates one rank gets when ``ranks_sharing`` ranks share the
        device: its threads on a host, else an equal share of the device."""
        if self.rank_threads:
            return self.rank_threads[min(ranks_sharing, len(self.rank_threads)) - 1]
        return 1.0 / ranks_sharing


@dataclass(frozen=True)
class Measured:
    """The same cell key measured before (``source``: "from results DIR")."""

    step_s: float
    first_step_s: float
    fixed_s: float
    peak_bytes: int | None
    source: str


@dataclass(frozen=True)
class Estimate:
    """Per-cell estimate; ``None`` figures are unknown. ``step_s`` is one measured step."""

    step_s: float | None
    first_step_s: float | None
    fixed_s: float
    memory_bytes: int | None  # per device
    time_source: str
    memory_source: str
    # The numerics reference this cell computes after its steps (hpubench.run.cellrun.reference): K eager
    # 32-true steps of a fresh model, paid by one cell per reference in a run (:func:`reference_s`), 0 else.
    reference_s: float = 0.0

    def steps_for(self, cell: Cell) -> int:
        """Measured steps the cell runs: its fixed count, or under ``--steps auto`` the most it can take
        (what max-time allows at the estimated step time, never fewer than min steps, never more than the
        step cap): an estimate of an auto cell is an upper bound, since the target may stop it earlier."""
        if cell.steps is not None:
            return cell.steps
        auto = cell.auto_steps or AutoSteps()
        if self.step_s is None or self.step_s <= 0:
            return auto.min_steps
        by_time = math.ceil(auto.max_time_s / self.step_s)
        return max(auto.min_steps, min(MAX_AUTO_STEPS, by_time))

    def cell_time_s(self, cell: Cell) -> float | None:
        """Wall time of ``cell`` at its own step counts (:meth:`steps_for`), with the warm-up a compiling
        cell runs until a step compiles nothing (:func:`warmup_steps_expected`) and an auto cell adds to
        reach its minimum time (:func:`hpubench.plan.autosteps.warmup_extension`)."""
        warmup = warmup_steps_expected(cell, cell.warmup_steps)
        if cell.steps is None and self.step_s and warmup >= 1:
            auto = cell.auto_steps or AutoSteps()
            warmup += warmup_extension([self.step_s] * warmup, auto.min_time_s)
        total = self.cell_s(warmup, self.steps_for(cell))
        return None if total is None else total + self.reference_s

    def cell_s(self, warmup_steps: int, steps: int) -> float | None:
        """Wall time of the cell with these step counts: fixed + first step + the rest, the warm-up's
        lead-in step, and the phase split's steps after the measured ones."""
        if self.step_s is None or self.first_step_s is None:
            return None
        return cell_wall_s(self.fixed_s, self.first_step_s, self.step_s, warmup_steps, steps)


def cell_wall_s(fixed_s: float, first_step_s: float, step_s: float, warmup_steps: int, steps: int) -> float:
    """A cell's wall time from its costs and step counts, the one formula the estimate and ``--budget``
    share: fixed + first warm-up step + the other warm-up steps, the lead-in step (``LEAD_IN_STEPS``), the
    measured steps and the phase split's steps after them, each at ``step_s``."""
    rest = warmup_steps - 1 + LEAD_IN_STEPS + steps + PHASE_EXTRA_STEPS
    return fixed_s + first_step_s + rest * step_s


def warmup_steps_expected(cell: Cell, warmup_steps: int) -> int:
    """Warm-up steps ``cell`` is expected to run when given ``warmup_steps``: a cell whose first step
    compiles (any mode but eager, or graph capture) runs until a step compiles nothing
    (:func:`hpubench.plan.autosteps.compiled_warmup`); a cell that never settles runs up to the bound more,
    which no estimate assumes."""
    return compiled_warmup(warmup_steps, cell.mode != "eager" or cell.graphs)


def rate_dtype(precision: str) -> str:
    """Which dtype's measured matmul rate bounds ``precision`` (its declaration); fp32 for an unknown one."""
    try:
        return precisions.get(precision).rate_dtype
    except KeyError:
        return "fp32"


def memory_bytes(
    facts: ModelFacts, precision: str, world_size: int = 1, mode: str = "eager", sharded: bool = False
) -> int:
    """Bytes one device holds at the peak of a step (the formula in the module docstring); several ranks
    add DDP's gradient buckets, a flat copy of the gradients. ``sharded`` (fsdp): parameters, gradients
    and optimizer states are split over the ranks, and one block's parameters are gathered at a time
    (counted as a whole-model transient, an upper bound)."""
    declared = precisions.get(precision)
    low = declared.param_bytes < 4
    mixed = declared.mixed
    w = declared.param_bytes
    states = OPTIMIZER_STATES.get(facts.optimizer, 2)
    transient = w + (2 if mixed else 0)
    held = w + w + states * w  # parameters, gradients, optimizer states
    if sharded and world_size > 1:
        per_param = held / world_size + transient
    else:
        per_param = held + transient + (w if world_size > 1 else 0)
    act = 0.5 if low else MIXED_ACTIVATION if mixed else 1.0
    return int(
        BASELINE_BYTES
        + (COMPILE_BYTES if mode == "compile" else 0)
        + (DIST_BYTES if world_size > 1 else 0)
        + int(facts.params * per_param)
        + facts.activation_bytes_fp32 * act
        + N_BATCHES * facts.batch_bytes_fp32
    )


def step_time_s(
    facts: ModelFacts,
    precision: str,
    calibration: Calibration | None,
    peak_tflops: float | None,
    ranks_sharing: int = 1,
) -> tuple[float | None, str]:
    """Seconds per steady step and where the rate came from.

    ``ranks_sharing``: ranks that divide one device's compute among themselves (CPU "devices" are ranks
    on one host's cores): each gets ``Calibration.rank_share`` of the calibrated rate.
    """
    dtype = rate_dtype(precision)
    rate = calibration.tflops.get(dtype) if calibration is not None else None
    if rate and rate > 0:
        assert calibration is not None
        conv_rate = calibration.conv_tflops.get(dtype, 0.0) if facts.conv_flops else 0.0
        conv = facts.conv_flops if conv_rate > 0 else 0
        # FLOP/s one rank of the cell gets per calibrated TFLOP/s:
        scale = 1e12 * MODEL_EFFICIENCY * calibration.rank_share(ranks_sharing)
        step = (facts.flops - conv) / (rate * scale)
        step += facts.ops * calibration.per_op_s * ranks_sharing
        rates = f"{dtype} {gflops(rate)}"
        if conv:
            step += conv / (conv_rate * scale)
            rates += f", convolutions {gflops(conv_rate)};"
        return step, f"{calibration.source} ({rates} x {MODEL_EFFICIENCY} assumed)"
    if peak_tflops:
        per_rank = peak_tflops * 1e12 * ASSUMED_PEAK_EFFICIENCY / ranks_sharing
        return facts.flops / per_rank, f"published {dtype} peak x {ASSUMED_PEAK_EFFICIENCY} assumed"
    return None, "no rate: not calibrated and no published peak"


def gflops(tflops: float) -> str:
    """A calibrated rate in GFLOP/s, never in exponent form: ``.3g`` printed a four-digit rate as
    ``1.23e+03``, which a user should not have to read and the golden outputs' number mask does not cover."""
    return f"{numfmt.sig(tflops * 1e3)} GFLOP/s"


def fixed_s(facts: ModelFacts | None, world_size: int, fresh_process: bool = False) -> float:
    """Per-cell cost outside the steps: process start, model build, batches, FLOP count."""
    s = FIXED_S + (facts.params / 1e6 * FIXED_S_PER_MPARAM if facts is not None else 0.0)
    if world_size > 1:
        return s + MULTI_PROCESS_FIXED_S
    return s + (FRESH_PROCESS_S if fresh_process else 0.0)


def first_step_s(step: float, mode: str, facts: ModelFacts | None) -> float:
    """The first warm-up step: a few steady steps' worth in eager, plus compilation in compile mode."""
    extra = COMPILE_S_PER_OP * facts.ops if mode == "compile" and facts is not None else 0.0
    return step * FIRST_STEP_FACTOR + extra


def estimate_cell(
    *,
    precision: str,
    mode: str,
    world_size: int,
    ranks_sharing: int,
    facts: ModelFacts | None,
    calibration: Calibration | None,
    peak_tflops: float | None,
    measured: Measured | None = None,
    facts_source: str = "counted on meta",
    sharded: bool = False,
    fresh_process: bool = False,
) -> Estimate:
    """One cell's estimate: earlier results first, then FLOPs at the calibrated or published rate.
    ``fresh_process``: the cell starts its own interpreter (a plain-condition cell)."""
    mem = memory_bytes(facts, precision, world_size, mode, sharded) if facts is not None else None
    mem_source = f"formula ({facts_source})" if facts is not None else "unknown: model not counted"
    if measured is not None:
        if measured.peak_bytes:
            mem, mem_source = measured.peak_bytes, measured.source
        return Estimate(
            measured.step_s, measured.first_step_s, measured.fixed_s, mem, measured.source, mem_source
        )
    if facts is None:
        return Estimate(
            None,
            None,
            fixed_s(None, world_size, fresh_process),
            mem,
            "unknown: model not counted",
            mem_source,
        )
    step, source = step_time_s(facts, precision, calibration, peak_tflops, ranks_sharing)
    if step is None:
        return Estimate(None, None, fixed_s(facts, world_size, fresh_process), mem, source, mem_source)
    first = first_step_s(step, mode, facts)
    return Estimate(step, first, fixed_s(facts, world_size, fresh_process), mem, source, mem_source)


def reference_s(
    facts: ModelFacts | None, calibration: Calibration | None, peak_tflops: float | None, steps: int
) -> float:
    """What computing a numerics reference costs: a fresh model built and ``steps`` eager 32-true steps,
    the first as slow as an eager first step (0 where the model or its rate is unknown)."""
    if facts is None or steps <= 0:
        return 0.0
    step, _ = step_time_s(facts, "32-true", calibration, peak_tflops)
    if step is None:
        return 0.0
    return facts.params / 1e6 * FIXED_S_PER_MPARAM + (steps - 1 + FIRST_STEP_FACTOR) * step


def measured_from_times(
    step_times_s: tuple[float, ...],
    warmup_times_s: tuple[float, ...],
    wall_s: float | None,
    peak_bytes: int | None,
    source: str,
) -> Measured | None:
    """An earlier record's figures as an estimate; None when it measured no step."""
    if not step_times_s:
        return None
    step = sum(step_times_s) / len(step_times_s)
    first = warmup_times_s[0] if warmup_times_s else step
    spent = sum(step_times_s) + sum(warmup_times_s)
    # The phase split's steps ran after the measured ones (records before it: a few steps less fixed cost).
    fixed = max(0.0, (wall_s or spent) - spent - PHASE_EXTRA_STEPS * step)
    return Measured(step, first, fixed, peak_bytes, source)


def memory_skip_reason(
    needed_bytes: int | None, available_bytes: int | None, sharded: bool = False
) -> str | None:
    """The skip reason of a cell that cannot fit, or None (also when either figure is unknown).

    A cell fits when its estimate plus ``MEMORY_MARGIN`` does: the estimate reads up to 8% under the
    peak measured here (README: Estimates and budgets), and a 2-rank resnet standard cell estimated at
    11.2 GiB a rank against 11.4 GiB available ran into the kernel's OOM killer (2026-11-27)."""
    if needed_bytes is None or available_bytes is None:
        return None
    with_margin = needed_bytes * (1 + MEMORY_MARGIN)
    if with_margin <= available_bytes:
        return None
    needs = (
        f"needs ~{needed_bytes / GIB:.1f} GiB per device, {available_bytes / GIB:.1f} GiB available "
        f"(memory estimate, {with_margin / GIB:.1f} GiB with its {MEMORY_MARGIN:.0%} margin for error; "
    )
    if sharded:
        return (
            f"{needs}"
            "fsdp splits the model, its gradients and optimizer states over the devices: "
            "try more devices, a smaller batch or bf16-true; see hpubench list cells --skipped)"
        )
    # Data-parallel cells are all hpubench runs: more DDP devices do not shrink what each one holds.
    return (
        f"{needs}"
        "every device holds the whole model, its gradients and optimizer states, as DDP "
        "does: try a smaller batch or bf16-true, a device with more memory, or sharding over more devices "
        "(--strategy fsdp --devices N: FSDP); see hpubench list cells --skipped)"
    )


def parse_duration(text: str) -> float:
    """Seconds from "90s", "60m", "1.5h" or a bare number of seconds; ValueError naming the fix."""
    t = text.strip().lower()
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    scale = units.get(t[-1:])
    number = t[:-1] if scale is not None else t
    try:
        value = float(number) * (scale or 1.0)
    except ValueError:
        raise ValueError(f"{text!r} is not a duration; give a number with s, m or h, e.g. 60m") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r} is not a positive duration; give e.g. 90s, 60m or 2h")
    return value


def format_duration(seconds: float | None) -> str:
    """ "42 s", "12.5 min", "3.2 h"; "?" when unknown."""
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def format_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / GIB:.2f} GiB" if n < 10 * GIB else f"{n / GIB:.0f} GiB"
