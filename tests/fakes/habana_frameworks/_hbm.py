"""Running out of device memory (contract C8) and precisions a generation lacks (C9).

The double's "HBM" is host memory, so an allocation cannot be refused when it happens: the resident set
is checked against ``memory_stats()["Limit"]`` where the bridge would have run the work (``synchronize``,
``mark_step``), and beyond it the bridge-like out-of-memory ``RuntimeError`` is raised there.

fp16 autocast on a first-generation Gaudi is refused when the autocast is entered (``torch.autocast``
is replaced, only in a process whose device is first-generation when the bridge loads).
"""

from __future__ import annotations

from typing import Any

import torch

from habana_frameworks._double import MEMORY, device_name, is_first_generation, limit_bytes, record

OOM = "out of memory: HPU device allocation failed"
_AUTOCAST = torch.amp.autocast_mode.autocast


def check_fits() -> None:
    in_use, limit = MEMORY.sample(), limit_bytes()
    if in_use > limit:
        record("hbm.oom", f"in_use={in_use} limit={limit}")
        raise RuntimeError(f"{OOM}: {in_use} bytes in use, the card has {limit} ({device_name()})")


class _FirstGenAutocast(_AUTOCAST):  # type: ignore[misc]
    def __init__(self, device_type: str, dtype: Any = None, *args: Any, **kwargs: Any) -> None:
        if device_type == "hpu" and dtype == torch.float16 and is_first_generation():
            raise RuntimeError(f"float16 is not supported on {device_name()}: use bfloat16")
        super().__init__(device_type, dtype, *args, **kwargs)


def install() -> None:
    torch.autocast = _FirstGenAutocast if is_first_generation() else _AUTOCAST  # type: ignore[misc]
