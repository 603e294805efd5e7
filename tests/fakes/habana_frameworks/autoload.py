"""Double of ``habana_frameworks.autoload``: the function torch calls at ``import torch`` (contract C2).

torch 2.x loads out-of-tree device backends at ``import torch``: it calls every entry point of the
``torch.backends`` group (unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). The double registers one in
``tests/fakes/habana_torch_plugin-1.19.0+testdouble.dist-info/entry_points.txt``, so any interpreter
with ``tests/fakes`` on its path loads the bridge when it imports torch, as a 1.19 install does.

``PT_HPU_AUTOLOAD=0`` turns it off. Any other value, unset included, loads: the contract's reading of
C2. (Bridge sources read for this double also skip autoload when ``PT_HPU_AUTOLOAD`` is unset and lazy
mode is in force; the stricter reading here is the one code must survive.)

"Loading" is what importing ``habana_frameworks.torch`` does in the real bridge: it imports ``core``,
which reads ``PT_HPU_LAZY_MODE`` (fixed from then on) and registers ``torch.hpu``.
"""

from __future__ import annotations

import importlib
import os
import sys

AUTOLOAD_ENV = "PT_HPU_AUTOLOAD"
BRIDGE_MODULE = "habana_frameworks.torch.core"


def is_autoload_enabled() -> bool:
    return os.environ.get(AUTOLOAD_ENV) != "0"


def __autoload() -> None:
    """The entry point. Loading twice is a no-op (an explicit import may have come first)."""
    if BRIDGE_MODULE in sys.modules or not is_autoload_enabled():
        return
    importlib.import_module(BRIDGE_MODULE)
