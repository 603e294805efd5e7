"""The double's stand-in for the HPU device, and torch.Generator refusing it (contract C1).

Stock CPU torch cannot allocate on ``"hpu"``, so under the double the HPU device handed to harness code is
``STAND_IN``: the CPU device with an explicit index 0 (``cpu:0``), which tensors accept as host memory but
which the double can tell apart from a plain ``"cpu"``. The bridge's torch refuses a Generator on HPU;
the double refuses it on ``"hpu"`` and on the stand-in alike, so harness code that builds a Generator on
the accelerator's device fails in tests as it would on a Gaudi.
"""

from __future__ import annotations

from typing import Any

import torch

STAND_IN = torch.device("cpu", 0)
REFUSAL = "Device type HPU is not supported for torch.Generator() api."
_ORIGINAL = torch._C.Generator


def is_hpu_device(device: Any) -> bool:
    """``"hpu"``, ``"hpu:N"``, a torch.device of type hpu, or the stand-in ``cpu:0``."""
    if device is None:
        return False
    if isinstance(device, int):  # torch reads a bare int as an index on the current accelerator
        return False
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        return False
    return dev.type == "hpu" or (dev.type == "cpu" and dev.index == 0)


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
