"""Where a step's time goes: forward, backward and optimizer (and data, with a host loader), per step.

Users ask where a step's time goes (Lightning #19939); a profiler trace answers only in operators. The
split is measured on a few sampled steps *after* the measured ones and the memory snapshot
(:mod:`hpubench.measure.phasetimer`), each phase bracketed by the device's synchronize, so the headline
figure, its interval and the peak memory never see it. The syncs between phases take away the overlap a
plain step has (host launches of one phase running beside the device's work on the last), so the phases
are checked against the measured step: the record keeps the residue, what the measured mean step has
that the sum of the phases does not (negative where the phases took longer apart than together).

A step that runs as one captured or lazily accumulated graph has no honest split: it is recorded as not
separable, with the reason, never with an invented one.

Pure: the record, its arithmetic and its words. Running the steps is ``phasetimer``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from statistics import median
from typing import TYPE_CHECKING, Any

from hpubench.plan.cost import PHASE_SAMPLED_STEPS

if TYPE_CHECKING:
    import torch

    from workloads.base import Batch

SAMPLED_STEPS = PHASE_SAMPLED_STEPS  # timed phased steps; the plan's estimate counts them (plan.cost)
PHASES = ("forward", "backward", "optimizer")
METHOD = (
    "host time around each phase, the device synchronised before and after each; medians of "
    f"{SAMPLED_STEPS} steps run after the measured ones (one untimed first)"
)


@dataclass(frozen=True)
class PhasedStep:
    """The cell's training step as separate calls, doing what the measured step does in the same order:
    ``forward`` (the loss, under the precision's context), ``backward`` (scaled where the precision
    scales, then the device's post-backward hook), ``optimizer`` (the step, the post-step hook, then
    ``zero_grad``). ``zero_grad`` alone starts a pass, since the measured step zeroes at its start."""

    forward: Callable[[Batch], torch.Tensor]
    backward: Callable[[torch.Tensor], None]
    optimizer: Callable[[], None]
    zero_grad: Callable[[], None]


@dataclass(frozen=True)
class PhasePlan:
    """How a cell's step is to be split: its phased step, or None and why there is none; and what the
    phases include beyond their names (DDP: the all-reduce), for the record."""

    phased: PhasedStep | None
    why_not: str | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class PhaseSplit:
    """One cell's split of a step; ``separable`` False keeps every phase None and says why in ``method``.

    ``step_mean_s`` is the measured steps' mean (this process's, rank 0's in a distributed cell) that the
    phases are checked against; ``residue`` = 1 - (forward + backward + optimizer) / ``step_mean_s``.
    ``data_s`` is the host loader's wait per step (``--loader host``), which the measured step, fed from
    batches already on the device, never includes: it is beside the step, not a share of it."""

    separable: bool
    method: str
    steps: int  # sampled (timed) steps; 0 when not separable
    step_mean_s: float
    forward_s: float | None = None
    backward_s: float | None = None
    optimizer_s: float | None = None
    data_s: float | None = None
    residue: float | None = None
    notes: tuple[str, ...] = ()
    # The measured steps' median: on a shared host a few descheduled steps lift the mean, not the median,
    # so the residue against it (``residue_p50``) tells a stretched mean from time the phases miss.
    step_p50_s: float | None = None

    @property
    def residue_p50(self) -> float | None:
        total = self.phase_sum_s
        if total is None or self.step_p50_s is None:
            return None
        return residue_of(total, self.step_p50_s)

    @property
    def phase_sum_s(self) -> float | None:
        parts = (self.forward_s, self.backward_s, self.optimizer_s)
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)

    def share(self, phase: str) -> float | None:
        """``phase``'s seconds over the measured mean step (None where not separable or no step)."""
        seconds = getattr(self, f"{phase}_s")
        if seconds is None or self.step_mean_s <= 0:
            return None
        return float(seconds) / self.step_mean_s

    @property
    def forward_share(self) -> float | None:
        return self.share("forward")

    @property
    def backward_share(self) -> float | None:
        return self.share("backward")

    @property
    def optimizer_share(self) -> float | None:
        return self.share("optimizer")

    @property
    def data_share(self) -> float | None:
        return self.share("data")

    @property
    def summary(self) -> str:
        """One line for a reader: the shares and the residue, or why there is no split."""
        if not self.separable or self.residue is None:
            return f"not separable: {self.method}"
        shares = ", ".join(f"{p} {_pct(self.share(p))}" for p in PHASES)
        line = (
            f"{shares} of the measured step; phases sum to {_pct(1 - self.residue)} of the measured step; "
            f"residue {_pct(self.residue)}"
        )
        if self.residue_p50 is not None:
            line += f" (against the median step {_pct(self.residue_p50)})"
        if self.data_s is not None:
            line += f"; data wait (host loader, beside the step) {_pct(self.data_share)} of it"
        return line

    @property
    def detail(self) -> str:
        """:attr:`summary`, then how it was measured and what the phases include (a tooltip's text)."""
        parts = [self.summary] + ([self.method] if self.separable else []) + list(self.notes)
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PhaseSplit:
        d = dict(data)
        d["notes"] = tuple(str(n) for n in d.get("notes") or ())
        return cls(**d)


def _pct(fraction: float | None) -> str:
    return "-" if fraction is None else f"{fraction * 100:.0f}%"


def residue_of(phase_sum_s: float, step_mean_s: float) -> float:
    """The share of the measured mean step the phases do not account for (negative: they took longer)."""
    return 1.0 - phase_sum_s / step_mean_s if step_mean_s > 0 else 0.0


def split_from_samples(
    forward_s: Sequence[float],
    backward_s: Sequence[float],
    optimizer_s: Sequence[float],
    step_mean_s: float,
    data_s: Sequence[float] | None = None,
    notes: Sequence[str] = (),
    method: str = METHOD,
    step_p50_s: float | None = None,
) -> PhaseSplit:
    """The split from each phase's per-step seconds: medians (one descheduled moment on a shared host
    stretches one sample, not the median), checked against the measured mean step."""
    if not (len(forward_s) == len(backward_s) == len(optimizer_s)) or not forward_s:
        raise ValueError("each phase needs the same number of samples, at least one")
    f, b, o = median(forward_s), median(backward_s), median(optimizer_s)
    return PhaseSplit(
        separable=True,
        method=method,
        steps=len(forward_s),
        step_mean_s=step_mean_s,
        forward_s=f,
        backward_s=b,
        optimizer_s=o,
        data_s=median(data_s) if data_s else None,
        residue=residue_of(f + b + o, step_mean_s),
        notes=tuple(notes),
        step_p50_s=step_p50_s,
    )


def not_separable(
    reason: str, step_mean_s: float, notes: Sequence[str] = (), step_p50_s: float | None = None
) -> PhaseSplit:
    """The record of a step that cannot be split honestly: no phase figures, the reason."""
    return PhaseSplit(
        separable=False,
        method=reason,
        steps=0,
        step_mean_s=step_mean_s,
        notes=tuple(notes),
        step_p50_s=step_p50_s,
    )


def why_not_separable(mode: str, graphs: bool, capture_name: str) -> str | None:
    """Why a step in this mode cannot be split, or None where it can.

    A captured graph (CUDA graphs, HPU graphs) replays forward, backward and optimizer as one unit, and a
    lazy-mode step accumulates its ops into graphs that run at ``mark_step``: a sync between phases would
    run graphs the measured step never runs. A model under ``torch.compile`` splits: its forward and
    backward are the compiled graphs, called apart as in the measured step, the optimizer eager.
    """
    if graphs:
        return (
            f"the step runs as a captured graph ({capture_name}), replayed whole: its phases cannot be "
            "timed apart"
        )
    if mode == "lazy":
        return (
            "lazy mode: the step's ops accumulate into graphs run at mark_step; a sync between phases "
            "would cut graphs the measured step does not run"
        )
    return None


def phase_notes(mode: str, strategy: str, world_size: int, extra_work: bool) -> tuple[str, ...]:
    """What the phases include beyond their names, and whose they are, for the record to say."""
    notes: list[str] = []
    if mode == "compile":
        notes.append("torch.compile: forward and backward are the compiled graphs, the optimizer eager")
    if strategy == "ddp":
        notes.append("DDP: backward includes the gradient all-reduce")
    elif strategy == "fsdp":
        notes.append(
            "FSDP: forward and backward include the parameter all-gathers, backward the gradient "
            "reduce-scatter"
        )
    if world_size > 1:
        notes.append("rank 0's phases, against rank 0's measured mean step")
    if extra_work:
        notes.append("extra_work's planted compute runs in no phase: it is in the residue")
    return tuple(notes)
