"""Precision plugins: how parameters are stored, what autocast runs, and whether gradients are scaled.

The names and facts are declared in ``hpubench.precision.spec``; this module holds the built-ins' behaviour,
each a function its declaration names. Device-specific parts (the fp16 grad scaler, fp8 through HPU's
transformer engine) are asked of the accelerator, so one plugin serves every device.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from hpubench.accelerators.base import Accelerator
from hpubench.precision import spec as precisions

ContextFactory = Callable[[], contextlib.AbstractContextManager[Any]]


@dataclass
class PreparedPrecision:
    """What the training step needs from the precision: model, a context per step, a scaler, a cast."""

    model: nn.Module
    context: ContextFactory
    scaler: Any | None
    input_dtype: torch.dtype | None  # floating inputs are cast to this (bf16-true), None keeps them
    describe: dict[str, str]

    @property
    def plain(self) -> bool:
        """No context around the forward and no gradient scaling: the step needs neither."""
        return self.scaler is None and self.context is contextlib.nullcontext


def _autocast(acc: Accelerator, dtype: torch.dtype) -> ContextFactory:
    return lambda: torch.autocast(device_type=acc.autocast_device_type, dtype=dtype)


def full32(model: nn.Module, acc: Accelerator) -> PreparedPrecision:
    return PreparedPrecision(
        model, contextlib.nullcontext, None, None, {"params": "float32", "autocast": "off"}
    )


def bf16_mixed(model: nn.Module, acc: Accelerator) -> PreparedPrecision:
    return PreparedPrecision(
        model, _autocast(acc, torch.bfloat16), None, None, {"params": "float32", "autocast": "bfloat16"}
    )


def fp16_mixed(model: nn.Module, acc: Accelerator) -> PreparedPrecision:
    scaler = acc.grad_scaler()
    return PreparedPrecision(
        model,
        _autocast(acc, torch.float16),
        scaler,
        None,
        {"params": "float32", "autocast": "float16", "grad_scaler": "on" if scaler else "off"},
    )


def bf16_true(model: nn.Module, acc: Accelerator) -> PreparedPrecision:
    return PreparedPrecision(
        model.to(torch.bfloat16),
        contextlib.nullcontext,
        None,
        torch.bfloat16,
        {"params": "bfloat16", "autocast": "off"},
    )


def fp8(model: nn.Module, acc: Accelerator) -> PreparedPrecision:
    fp8_model, fp8_context = acc.prepare_fp8(model)
    bf16 = _autocast(acc, torch.bfloat16)

    @contextlib.contextmanager
    def both() -> Any:
        with bf16(), fp8_context():
            yield

    return PreparedPrecision(
        fp8_model,
        both,
        None,
        None,
        {"params": "float32", "autocast": "bfloat16", "fp8": "transformer_engine"},
    )


def prepare(precision: str, model: nn.Module, acc: Accelerator) -> PreparedPrecision:
    """Apply ``precision`` (its declaration in ``hpubench.precision.spec``) to ``model`` on ``acc``; raises
    CellSkipped where the device can't run it."""
    acc.check_precision(precision)
    module, _, func = precisions.get(precision).prepare.partition(":")
    apply: Callable[[nn.Module, Accelerator], PreparedPrecision] = getattr(
        importlib.import_module(module), func
    )
    return apply(model, acc)


def cast_batch(batch: tuple[torch.Tensor, ...], dtype: torch.dtype | None) -> tuple[torch.Tensor, ...]:
    if dtype is None:
        return batch
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in batch)
