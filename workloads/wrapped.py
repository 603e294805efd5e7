"""``workloads.wrap``: any ``nn.Module`` and a batch function as a workload, without subclassing.

A Workload subclass asks for a name, a description, ``SizeSpec`` sizes, ``build_model``, ``make_batch``
with its four arguments and a ``loss``; a model that computes its own loss (Hugging Face's, with
``labels``) or a batch that is a dict of keyword arguments then needs glue code. ``wrap`` takes the two
functions a user has anyway and fills in the rest:

- ``model(size)`` returns the module (it runs under ``with torch.device("meta")`` for the FLOP count and
  the memory estimate, so it must not read its weights);
- ``batch(size, batch_size, device, generator)`` returns a tensor, a tuple of tensors (passed to the
  model positionally) or a dict of tensors (passed by keyword): draw it with ``generator`` and on
  ``device``, both of which may be meta / None;
- the loss: ``loss(model, batch)`` if given, else the model's output when it is a scalar, its ``.loss``
  (Hugging Face) or ``["loss"]``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import torch
from torch import nn

from workloads.base import Batch, SizeSpec, Workload
from workloads.registry import register

ModelFn = Callable[[str], nn.Module]
BatchFn = Callable[[str, int, torch.device, "torch.Generator | None"], Any]
LossFn = Callable[[nn.Module, Any], torch.Tensor]
DEFAULT_SIZES: dict[str, int] = {"tiny": 8, "standard": 8}


def _as_loss(out: Any) -> torch.Tensor:
    """A model's output as a scalar loss: itself, ``.loss`` or ``["loss"]``; TypeError naming the fix."""
    for candidate in (out, getattr(out, "loss", None), out.get("loss") if isinstance(out, Mapping) else None):
        if isinstance(candidate, torch.Tensor) and candidate.dim() == 0:
            return candidate
    raise TypeError(
        f"the model returned {type(out).__name__}, not a scalar loss (nor .loss / ['loss']); "
        "pass loss=lambda model, batch: ... to workloads.wrap"
    )


class WrappedWorkload(Workload):
    """The class ``wrap`` derives from; its functions are class attributes of the derived class."""

    model_fn: ClassVar[ModelFn]
    batch_fn: ClassVar[BatchFn]
    loss_fn: ClassVar[LossFn | None] = None
    keys: ClassVar[tuple[str, ...] | None] = None  # a dict batch's keys, in order
    tokens: ClassVar[int | Mapping[str, int] | None] = None

    def build_model(self, size: str) -> nn.Module:
        self._check(size)
        return type(self).model_fn(size)

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        self._check(size)
        drawn = type(self).batch_fn(size, batch_size, device, generator)
        if isinstance(drawn, torch.Tensor):
            return (drawn,)
        if isinstance(drawn, Mapping):  # kept as a tuple (what the harness moves and casts), keys aside
            type(self).keys = tuple(drawn)
            return tuple(drawn.values())
        return tuple(drawn)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        keys = type(self).keys
        given: Any = dict(zip(keys, batch, strict=True)) if keys is not None else batch
        if type(self).loss_fn is not None:
            return type(self).loss_fn(model, given)
        return _as_loss(model(**given) if keys is not None else model(*given))

    def tokens_per_sample(self, size: str) -> int | None:
        tokens = type(self).tokens
        return tokens.get(size) if isinstance(tokens, Mapping) else tokens

    def _check(self, size: str) -> None:
        if size not in self.sizes:
            known = ", ".join(self.sizes)
            raise ValueError(f"unknown size {size!r} for workload {self.name!r}; known: {known}")


def wrap(
    name: str,
    model: ModelFn,
    batch: BatchFn,
    *,
    loss: LossFn | None = None,
    sizes: Mapping[str, int] | None = None,
    tokens_per_sample: int | Mapping[str, int] | None = None,
    description: str | None = None,
    optimizer: str = "adamw",
    lr: float = 1e-3,
) -> type[Workload]:
    """Register ``name`` as a workload of ``model`` and ``batch`` (see the module docstring).

    ``sizes``: size name -> default batch size (default tiny and standard, 8 each; a ``--workloads-from``
    file needs ``tiny``, which the default matrix runs). ``tokens_per_sample``: for tokens/s (an int,
    or one per size). Returns the registered class.
    """
    caller = inspect.currentframe()
    module = caller.f_back.f_globals.get("__name__", __name__) if caller and caller.f_back else __name__
    specs = {s: SizeSpec(int(b), f"{name} {s}: batch {b}") for s, b in (sizes or DEFAULT_SIZES).items()}
    attrs = {
        "name": name,
        "description": description or f"{name}: a wrapped nn.Module",
        "sizes": specs,
        "model_fn": staticmethod(model),
        "batch_fn": staticmethod(batch),
        "loss_fn": staticmethod(loss) if loss is not None else None,
        "tokens": tokens_per_sample,
        "optimizer": optimizer,
        "lr": lr,
        "__module__": module,  # the file that wrapped it: a reload replaces it, errors name the file
        "__qualname__": f"wrap({name!r})",
    }
    return register(type(f"Wrapped_{name}", (WrappedWorkload,), attrs))
