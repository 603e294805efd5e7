"""Double of the bridge's ``habana_frameworks.torch._hpu_C``: only ``cleanup``, the exit-time release.

The bridge registers ``_hpu_C.cleanup`` with ``atexit``, so a process ending with ``os._exit`` skips it;
calling it before ``os._exit`` gives the device back (contract C5). See ``habana_frameworks._lifecycle``.
"""

from __future__ import annotations

import os

from habana_frameworks import _lifecycle
from habana_frameworks._double import record


def cleanup() -> None:
    held = _lifecycle.release()
    record("hpu.cleanup", f"pid={os.getpid()} released={held}")
