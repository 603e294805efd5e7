"""Running out of device memory (contract C8).

The double's "HBM" is host memory, so an allocation cannot be refused when it happens: the resident set
is checked against ``memory_stats()["Limit"]`` (the allocator's pool, below the HBM) where the bridge would
have run the work (``synchronize``, ``mark_step``). Beyond it the bridge's own error is raised, a
``RuntimeError`` from ``device_memory.cpp`` whose text names the allocation that failed and holds no
"out of memory": ``[Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::N (M)MB``
(the rank from ``RANK``, default 0; M in C++'s default float format). The size the double names is what
the process grew by since the last sample that fitted.

First-generation Gaudi refuses float16 at the first float16 tensor (``_tensor.on_device``), not when an
autocast is entered.
"""

from __future__ import annotations

import os

from habana_frameworks._double import MEMORY, device_name, limit_bytes, record

_state = {"fitted": 0}


def devmem_error(size: int) -> str:
    rank = os.environ.get("RANK", "0")
    return (
        f"[Rank:{rank}] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::{size} "
        f"({size / (1024 * 1024):.6g})MB"
    )


def check_fits() -> None:
    in_use, limit = MEMORY.sample(), limit_bytes()
    if in_use <= limit:
        _state["fitted"] = in_use
        return
    size = max(in_use - _state["fitted"], in_use - limit)
    record("hbm.oom", f"in_use={in_use} limit={limit} size={size} ({device_name()})")
    raise RuntimeError(devmem_error(size))
