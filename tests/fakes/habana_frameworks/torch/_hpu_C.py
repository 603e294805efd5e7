"""Double of the bridge's ``habana_frameworks.torch._hpu_C``: only ``cleanup``.

In 1.19 ``cleanup`` syncs the lazy accumulation threads and clears the scalar cache
(``hpu/csrc/bindings.cpp``): it does not release the card, which stays held until the process exits
(contract C5). See ``habana_frameworks._lifecycle``.
"""

from __future__ import annotations

import os

from habana_frameworks import _lifecycle
from habana_frameworks._double import record


def cleanup() -> None:
    record("hpu.cleanup", f"pid={os.getpid()}")
    _lifecycle.cleanup()
