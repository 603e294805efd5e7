"""The phase split's column (``hpubench.measure.phases``): where a step's time goes, in the full terminal
table and the report's table. One short text for both: the forward / backward / optimizer shares of the
measured step and the residue, the data wait beside them where a host loader ran; the record's full
sentence (method, notes) is the page cell's tooltip."""

from __future__ import annotations

from typing import Any

from hpubench import numfmt
from hpubench.measure.phases import PhaseSplit
from hpubench.present.columns.cells import TableCell
from hpubench.present.columns.model import FrameRow, Runs

NOT_SPLIT = "not split"


def phase_split(runs: Runs) -> PhaseSplit | None:
    """The last measured run's split (repetitions: each has its own; the latest stands for the cell);
    None for records written before the split existed."""
    splits = [r.phases for r, _ in runs.measured if r.phases is not None]
    return splits[-1] if splits else None


def shares_text(
    forward: Any, backward: Any, optimizer: Any, residue: Any, data: Any = None, separable: bool = True
) -> str:
    """``38/45/14% res 3%`` (forward/backward/optimizer of the measured step, then the residue), with
    `` data 12%`` where a loader ran; ``not split`` for a step that has none; ``-`` where unknown."""
    if not separable:
        return NOT_SPLIT
    parts = (forward, backward, optimizer, residue)
    if any(numfmt.missing(p) for p in parts):
        return numfmt.DASH
    text = f"{forward * 100:.0f}/{backward * 100:.0f}/{optimizer * 100:.0f}% res {residue * 100:.0f}%"
    if not numfmt.missing(data):
        text += f" data {data * 100:.0f}%"
    return text


def phase_text(split: PhaseSplit | None) -> str:
    """The terminal cell of a split (:func:`shares_text`); ``-`` for a record from before it."""
    if split is None:
        return numfmt.DASH
    return shares_text(
        split.forward_share,
        split.backward_share,
        split.optimizer_share,
        split.residue,
        split.data_share,
        separable=split.separable,
    )


def phase_cell(v: Any, row: FrameRow) -> TableCell:
    """The report's cell: the shares as text, sorted by the forward share, the record's sentence (with
    its method and notes) as the tooltip."""
    if numfmt.missing(v):
        return TableCell(numfmt.MISSING)
    separable = not str(v).startswith("not separable")
    shown = shares_text(
        row["phase_forward_share"],
        row["phase_backward_share"],
        row["phase_optimizer_share"],
        row["phase_residue"],
        row["phase_data_share"],
        separable=separable,
    )
    forward = row["phase_forward_share"]
    return TableCell(shown, sort="" if numfmt.missing(forward) else repr(float(forward)), title=str(v))
