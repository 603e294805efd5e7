"""The numerics reference: the cell's first losses, and the 32-true eager trajectory they are judged against.

The reference is the same workload, size, batch and seed on the same accelerator at 32-true, eager, one
device, trained for :data:`~hpubench.analysis.numerics.STEPS_COMPARED` steps from the same initial weights
(``torch.manual_seed(SEED)`` before the model is built, as resolution does) on the same batches (the same
seeded draw). It runs after the cell's measured steps, its memory snapshot and its extra passes, so it
never touches the figures; and once per run: the first cell that needs it writes it into the run
directory (``references/``, one small JSON file per reference key, written whole with ``os.replace``, so
cells in concurrent processes never read half of one), and every later cell of the run reads it.

A cell of W ranks has its own reference (``hpubench.run.cellrun.rankref`` decides and gathers): one
device replays the data-parallel step, each step on the W ranks' batches concatenated (:func:`concat_ranks`)
with the loss the mean of the W ranks' losses on their own slices (:class:`RankMean`).

What the verdict was computed from goes into the record as ``runtime["numerics"]``; the verdict itself is
judged in ``hpubench.run.cellrun.record`` (``hpubench.analysis.numerics.judge``).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from hpubench.analysis import numerics
from hpubench.precision import apply as precision
from hpubench.run.batches import synthetic_batches
from hpubench.run.cellrun.resolve import N_BATCHES, SEED, Resolved
from hpubench.run.trainstep import make_optimizer, step_factory
from hpubench.store.layout import references_dir_of
from hpubench.store.rundir import write_json_atomic

if TYPE_CHECKING:
    from hpubench.accelerators.base import Accelerator
    from workloads.base import Batch, Workload


class LossTap:
    """The first :data:`~hpubench.analysis.numerics.STEPS_COMPARED` losses of a cell, warm-up first, read
    from the steps' ``on_step_time`` hook (outside every timed bracket), which it passes on unchanged."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.losses: list[float] = []

    def on_step_time(self, phase: str, index: int, seconds: float, loss: float) -> None:
        if len(self.losses) < numerics.STEPS_COMPARED:
            self.losses.append(float(loss))
        if self.inner is not None:
            self.inner(phase, index, seconds, loss)


@dataclass(frozen=True)
class Reference:
    """One reference trajectory, as cached: its losses (empty where it failed, with ``error``), what it
    cost, the mode it ran in, a digest of its batches, and which cell computed it."""

    key: str
    losses: tuple[float, ...]
    seconds: float
    mode_in_force: str
    batches_digest: str
    computed_by: str
    error: str | None = None
    cached: bool = field(default=False, compare=False)  # read from the run directory, not computed here

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "losses": list(self.losses),
            "seconds": self.seconds,
            "mode_in_force": self.mode_in_force,
            "batches_digest": self.batches_digest,
            "computed_by": self.computed_by,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Reference:
        return cls(
            str(d["key"]),
            tuple(float(x) for x in d["losses"]),
            float(d["seconds"]),
            str(d["mode_in_force"]),
            str(d["batches_digest"]),
            str(d["computed_by"]),
            d.get("error"),
            cached=True,
        )


def reference_key(resolved: Resolved, ranks: int = 1) -> str:
    """What makes two cells share a reference: workload, its options, size, batch, seed, accelerator and
    device model, the steps compared, and the ranks replayed (W ranks' data differs from one's)."""
    cell = resolved.cell
    options = ",".join(f"{k}={v}" for k, v in sorted(dict(cell.options).items()))
    return (
        f"{cell.workload}/{cell.size}/{cell.accelerator}/{resolved.device_name}/batch {resolved.batch_size}"
        f"/seed {SEED}/options {options or '-'}/steps {numerics.STEPS_COMPARED}"
    ) + (f"/ranks {ranks}" if ranks > 1 else "")


def is_reference_config(resolved: Resolved) -> bool:
    """The cell trains exactly as the reference does: 32-true, eager, no graph capture, one device."""
    cell = resolved.cell
    return (
        cell.precision == numerics.REFERENCE_PRECISION
        and cell.mode == numerics.REFERENCE_MODE
        and not cell.graphs
        and resolved.strategy.world_size == 1
    )


def batches_digest(batches: Sequence[Batch]) -> str:
    """A digest of the batches' shapes, dtypes and values: cells in other processes confirm they trained
    on the data the reference did (a workload counting its draws per process would not)."""
    h = hashlib.sha256()
    for batch in batches:
        for t in batch:
            h.update(f"{tuple(t.shape)}{t.dtype}".encode())
            flat = t.detach().reshape(-1).to("cpu", torch.float64)
            weights = torch.arange(1, flat.numel() + 1, dtype=torch.float64) % 97
            h.update(f"{float(flat.sum()):.17g}/{float((flat * weights).sum()):.17g}".encode())
    return h.hexdigest()[:16]


def draw(workload: Workload, resolved: Resolved, rank: int = 0) -> tuple[Batch, ...]:
    """The batches ``rank`` of the cell trains on (resolution seeds each rank's generator with seed +
    rank), drawn again from the seed, uncast."""
    acc = resolved.acc
    return tuple(
        synthetic_batches(
            workload,
            resolved.cell.size,
            resolved.batch_size,
            resolved.device,
            acc.generator_device(),
            SEED + rank,
            N_BATCHES,
        )
    )


def concat_ranks(per_rank: Sequence[Sequence[Batch]]) -> tuple[Batch, ...]:
    """Each step's batch of every rank concatenated along the batch dimension, tensor by tensor, rank 0
    first: the global batch a data-parallel step trains on, for one device to replay."""
    if not per_rank:
        return ()
    counts = {len(batches) for batches in per_rank}
    if len(counts) != 1:
        raise ValueError(f"the ranks hold different numbers of batches: {sorted(counts)}")
    return tuple(
        tuple(torch.cat(parts, dim=0) for parts in zip(*step, strict=True))
        for step in zip(*per_rank, strict=True)
    )


class RankMean:
    """The workload, with its loss the mean of its losses on ``parts`` equal slices of the batch: what a
    data-parallel step of ``parts`` ranks minimises (DDP and FSDP average the ranks' gradients), whatever
    the loss's own reduction (a token mean over a varying count, a sum) and with per-slice batch
    statistics, as each rank computes them. Everything else is the workload's own."""

    def __init__(self, workload: Workload, parts: int) -> None:
        self.workload = workload
        self.parts = parts

    def __getattr__(self, name: str) -> Any:
        return getattr(self.workload, name)

    def loss(self, model: torch.nn.Module, batch: Batch) -> torch.Tensor:
        slices = zip(*(t.chunk(self.parts, dim=0) for t in batch), strict=True)
        losses = [self.workload.loss(model, tuple(part)) for part in slices]
        return torch.stack(losses).mean()


def same_batches(drawn: Sequence[Batch], resolved: Resolved) -> bool:
    """Whether a second draw from the seed, cast as the cell casts, is exactly what the cell trained on."""
    dtype = resolved.prepared.input_dtype
    for mine, again in zip(resolved.batches, drawn, strict=True):
        cast = precision.cast_batch(again, dtype)
        if len(mine) != len(cast) or not all(
            a.shape == b.shape and torch.equal(a, b) for a, b in zip(mine, cast, strict=True)
        ):
            return False
    return len(resolved.batches) == len(drawn)


def trajectory(
    workload: Workload,
    size: str,
    acc: Accelerator,
    device: torch.device,
    batches: Sequence[Batch],
    precision_name: str = numerics.REFERENCE_PRECISION,
    compiled: bool = False,
    steps: int = numerics.STEPS_COMPARED,
    seed: int = SEED,
    ranks: int = 1,
) -> tuple[float, ...]:
    """The first ``steps`` losses of a fresh model (``torch.manual_seed(seed)`` before it is built, as
    resolution does) trained with the cell's own step on ``batches`` in the cell's order; eager unless
    ``compiled``; with ``ranks`` > 1 the batches are the ranks' concatenated and the loss their mean
    (:class:`RankMean`). ``benchmarks/numerics_tolerance.py`` measures the tolerances with it."""
    if ranks > 1:
        workload = RankMean(workload, ranks)  # type: ignore[assignment]
    torch.manual_seed(seed)
    model = workload.build_model(size).to(device)
    prepared = precision.prepare(precision_name, model, acc)
    net = prepared.model
    net.train()
    cast = [precision.cast_batch(b, prepared.input_dtype) for b in batches]
    optimizer = make_optimizer(workload, net, capturable=False)
    if compiled:
        net = torch.compile(net, **acc.compile_options(False))
    step = step_factory(workload, optimizer, prepared, acc)(net)
    losses: list[float] = []
    for i in range(steps):
        loss = step(cast[i % len(cast)])
        acc.synchronize()
        losses.append(float(loss.item()))
        del loss
    return tuple(losses)


def compute(resolved: Resolved, key: str, drawn: Sequence[Batch], ranks: int = 1) -> Reference:
    """The reference trajectory, computed in this process (``drawn``: the ranks' batches concatenated
    where ``ranks`` > 1); a failure is kept as the reference's error (cached too, so the run does not
    retry it in every cell)."""
    t0 = time.perf_counter()
    mode = resolved.acc.mode_in_force(numerics.REFERENCE_MODE)
    digest = batches_digest(drawn)
    try:
        acc, device = resolved.acc, resolved.device
        losses = trajectory(resolved.workload, resolved.cell.size, acc, device, drawn, ranks=ranks)
        error = None
    except Exception as exc:  # the reference's failure is the verdict's reason, never the cell's failure
        losses, error = (), " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return Reference(key, losses, time.perf_counter() - t0, mode, digest, resolved.cell.key, error)


def cache_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.json"


def read_cached(cache_dir: Path | None, key: str) -> Reference | None:
    """The run's reference for ``key``, or None (none yet, no run directory, or an unreadable file)."""
    if cache_dir is None:
        return None
    try:
        ref = Reference.from_dict(json.loads(cache_path(cache_dir, key).read_text()))
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return ref if ref.key == key else None


def write_cached(cache_dir: Path | None, ref: Reference) -> None:
    """Keep ``ref`` for the rest of the run; a write that fails costs only the reuse."""
    if cache_dir is None:
        return
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(cache_path(cache_dir, ref.key), ref.to_dict(), durable=False)
    except OSError:
        pass


def runtime_numerics(
    losses: Sequence[float], ref: Reference | None, why_unchecked: str | None, note: str | None = None
) -> dict[str, Any]:
    """``runtime["numerics"]``: what the verdict is computed from (record.py judges it)."""
    n = min(len(losses), len(ref.losses)) if ref is not None else 0
    out: dict[str, Any] = {
        "steps_compared": min(n, numerics.STEPS_COMPARED),
        "losses": [x if math.isfinite(x) else str(x) for x in losses],
    }
    if ref is not None:
        out.update(
            reference_key=ref.key,
            reference_losses=list(ref.losses),
            reference_s=round(ref.seconds, 4),
            reference_mode=ref.mode_in_force,
            reference_by=ref.computed_by,
            reference="cached" if ref.cached else "own" if note else "computed",
        )
    if why_unchecked:
        out["unchecked"] = why_unchecked
    if note:
        out["note"] = note
    return out


def numerics_facts(resolved: Resolved, losses: Sequence[float], progress_path: str | None) -> dict[str, Any]:
    """Find or compute a one-device cell's reference and return ``runtime["numerics"]``; never raises.
    (A cell of several ranks: ``hpubench.run.cellrun.rankref``.)"""
    workload = resolved.workload
    if not getattr(workload, "data_from_seed", True):
        why = f"workload {resolved.cell.workload} declares its data is not reproducible from the seed"
        return runtime_numerics(losses, None, why)
    key = reference_key(resolved)
    cache_dir = references_dir_of(Path(progress_path)) if progress_path else None
    try:
        drawn = draw(workload, resolved)
        if not same_batches(drawn, resolved):
            why = "the workload's batches are not reproducible from the seed (a second draw differs)"
            return runtime_numerics(losses, None, why)
        ref = read_cached(cache_dir, key)
        if ref is None and is_reference_config(resolved) and len(losses) >= numerics.STEPS_COMPARED:
            cell = resolved.cell
            own = Reference(key, tuple(losses), 0.0, cell.mode, batches_digest(drawn), cell.key)
            write_cached(cache_dir, own)
            note = "this cell is the reference configuration (32-true eager, one device): its own reference"
            return runtime_numerics(losses, own, None, note)
        if ref is None:
            ref = computed(resolved, key, drawn, cache_dir)
        return against(losses, ref, drawn)
    except Exception as exc:  # the reference must never fail the cell
        return runtime_numerics(losses, None, f"no reference: {type(exc).__name__}: {exc}"[:300])


def computed(
    resolved: Resolved, key: str, drawn: Sequence[Batch], cache_dir: Path | None, ranks: int = 1
) -> Reference:
    """The reference computed here and cached for the run's later cells (a failure too)."""
    ref = compute(resolved, key, drawn, ranks=ranks)
    write_cached(cache_dir, ref)
    return ref


def against(losses: Sequence[float], ref: Reference, drawn: Sequence[Batch]) -> dict[str, Any]:
    """``runtime["numerics"]`` of ``losses`` against ``ref``, unchecked where the reference failed or was
    trained on other batches than ``drawn``."""
    if ref.error:
        return runtime_numerics(losses, ref, f"the 32-true eager reference failed: {ref.error}")
    if ref.batches_digest != batches_digest(drawn):
        why = "the workload's batches differ from the reference's (not reproducible across processes)"
        return runtime_numerics(losses, ref, why)
    return runtime_numerics(losses, ref, None)
