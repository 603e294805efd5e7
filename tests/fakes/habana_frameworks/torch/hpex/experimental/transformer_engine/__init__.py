"""Double of ``habana_frameworks.torch.hpex.experimental.transformer_engine`` (FP8 training, Gaudi2+).

``Linear`` computes in the parameters' precision: the double has no fp8 kernels, it only lets code
exercise the FP8 path (swap layers, enter ``fp8_autocast``). On a first-generation Gaudi name
``fp8_autocast(enabled=True)`` raises RuntimeError, as FP8 does not exist there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from habana_frameworks import _double
from habana_frameworks._double import record
from habana_frameworks.torch.hpex.experimental.transformer_engine import recipe

__all__ = ["Linear", "fp8_autocast", "recipe"]

_fp8_enabled = False


class Linear(nn.Linear):
    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        params_dtype: torch.dtype | None = None,
        device: Any = None,
    ) -> None:
        record("te.Linear", f"in={in_features} out={out_features} bias={bias}")
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=params_dtype)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        record("te.Linear.forward", f"fp8={_fp8_enabled}")
        return super().forward(input)


@contextlib.contextmanager
def fp8_autocast(enabled: bool = True, fp8_recipe: recipe.DelayedScaling | None = None) -> Iterator[None]:
    global _fp8_enabled
    record("te.fp8_autocast", f"enabled={enabled} recipe={type(fp8_recipe).__name__}")
    if enabled and _double.is_first_generation():
        raise RuntimeError(f"FP8 is not supported on {_double.device_name()}: it needs Gaudi2 or newer")
    previous = _fp8_enabled
    _fp8_enabled = enabled
    try:
        yield
    finally:
        _fp8_enabled = previous
