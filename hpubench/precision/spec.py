"""Precisions, declared once: the names a matrix takes and what each means to peaks, estimates and training.

Pure (no torch), so planning, estimates and reports read the declarations without loading a device. The
behaviour, applying a precision to a model, is named here as ``"module:function"`` and imported only in
the worker (``hpubench.precision.apply.prepare``). Named as Lightning names them, because those are the
strings Gaudi users already type. Third parties add one with an installed package that advertises a
``Precision`` under the ``hpubench.precisions`` entry-point group.
"""

from __future__ import annotations

from dataclasses import dataclass

from hpubench.plugins.entrypoints import load_named

# The compute dtypes a precision may declare, and that peak and price tables give figures for.
DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp32", "tf32", "fp8")
ENTRY_POINT_GROUP = "hpubench.precisions"


@dataclass(frozen=True)
class Precision:
    """One precision and the facts the rest of hpubench reads from it."""

    name: str
    help: str
    peak_dtype: str  # the published peak that bounds it (MFU): mixed precision runs its matmuls low
    rate_dtype: str  # the measured matmul rate that bounds it in estimates (hpubench.plan.cost)
    param_bytes: int  # bytes per stored parameter: 4 with fp32 master weights, 2 in bf16
    mixed: bool  # autocast: matmul inputs saved in 16 bits beside fp32 parameters
    prepare: str  # "module:function" (model, accelerator) -> PreparedPrecision, imported in the worker


_BUILTIN_PREPARE = "hpubench.precision.apply"
BUILTINS: tuple[Precision, ...] = (
    Precision("32-true", "fp32 parameters and math", "fp32", "fp32", 4, False, f"{_BUILTIN_PREPARE}:full32"),
    Precision(
        "bf16-mixed",
        "fp32 parameters, bf16 autocast",
        "bf16",
        "bf16",
        4,
        True,
        f"{_BUILTIN_PREPARE}:bf16_mixed",
    ),
    Precision(
        "16-mixed",
        "fp32 parameters, fp16 autocast, gradient scaling where the device needs it",
        "fp16",  # the fact sheet has no fp16 column: 16-mixed gets no peak rather than a guess
        "fp16",
        4,
        True,
        f"{_BUILTIN_PREPARE}:fp16_mixed",
    ),
    Precision(
        "bf16-true", "bf16 parameters and math", "bf16", "bf16", 2, False, f"{_BUILTIN_PREPARE}:bf16_true"
    ),
    Precision(
        "fp8",
        "fp8 matmuls through the device's transformer engine, bf16 autocast elsewhere",
        "fp8",
        "bf16",  # what is not fp8 runs in bf16: its rate bounds an estimate from below
        4,
        True,
        f"{_BUILTIN_PREPARE}:fp8",
    ),
)
PRECISIONS: tuple[str, ...] = tuple(p.name for p in BUILTINS)  # the built-ins, in the presets' order

_REGISTRY: dict[str, Precision] = {p.name: p for p in BUILTINS}
_plugins_loaded = False


def load_entry_points() -> list[str]:
    """Register the precisions installed packages advertise (once per process); returns names added."""
    global _plugins_loaded
    if _plugins_loaded:
        return []
    _plugins_loaded = True
    return load_named(ENTRY_POINT_GROUP, "precision", Precision, _REGISTRY)


def names() -> tuple[str, ...]:
    load_entry_points()
    return tuple(_REGISTRY)


def get(name: str) -> Precision:
    load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown precision {name!r}; known: {', '.join(_REGISTRY)}") from None


def peak_dtype(name: str) -> str | None:
    """The dtype of the peak ``name`` is measured against; None for a precision nobody declared."""
    load_entry_points()
    p = _REGISTRY.get(name)
    return None if p is None else p.peak_dtype
