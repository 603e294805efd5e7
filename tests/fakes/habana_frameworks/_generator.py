"""torch.Generator refusing the HPU device (contract C1).

The bridge's torch refuses a Generator on HPU with the message below. Stock torch with the double's
device runtime refuses it too, but with another message ("Backend doesn't support getNewGenerator()"),
so the double installs a ``torch.Generator`` that raises the bridge's own error for ``"hpu"``,
``"hpu:N"`` and ``torch.device("hpu", N)``: harness code that builds a Generator on the accelerator's
device fails in tests as it would on a Gaudi.
"""

from __future__ import annotations

from typing import Any

import torch

REFUSAL = "Device type HPU is not supported for torch.Generator() api."
_ORIGINAL = torch._C.Generator


def is_hpu_device(device: Any) -> bool:
    """``"hpu"``, ``"hpu:N"`` or a torch.device of type hpu."""
    if device is None:
        return False
    if isinstance(device, int):  # torch reads a bare int as an index on the current accelerator
        return False
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        return False
    return dev.type == "hpu"


class _GeneratorMeta(type(_ORIGINAL)):  # type: ignore[misc]
    def __instancecheck__(cls, obj: Any) -> bool:
        # torch.default_generator and generators made before the double loaded are still Generators.
        return isinstance(obj, _ORIGINAL)


class Generator(_ORIGINAL, metaclass=_GeneratorMeta):  # type: ignore[misc]
    """torch.Generator with the bridge's refusal of the HPU device."""

    def __new__(cls, device: Any = "cpu") -> Generator:
        if is_hpu_device(device):
            raise RuntimeError(REFUSAL)
        return super().__new__(cls, device)


def install() -> None:
    """Make ``torch.Generator`` the refusing one (idempotent; a re-imported double reinstalls)."""
    torch.Generator = Generator  # type: ignore[misc]
