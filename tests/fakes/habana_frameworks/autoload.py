"""Double of ``habana_frameworks.autoload``: the function torch calls at ``import torch`` (contract C2).

torch 2.x loads out-of-tree device backends at ``import torch``: it calls every entry point of the
``torch.backends`` group (unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). The double registers one in
``tests/fakes/habana_torch_plugin-1.19.0+testdouble.dist-info/entry_points.txt``, as a 1.19 install does.

As the bridge's ``autoload/__init__.py`` decides (plain string comparisons): ``PT_HPU_AUTOLOAD=1`` loads,
``0`` does not; unset (or any other value), it loads unless ``PT_HPU_LAZY_MODE`` is ``"1"`` or unset:
in lazy mode, the 1.19 default, ``import torch`` alone does NOT load the bridge.

"Loading" imports ``habana_frameworks.torch`` (the whole bridge), which sets ``is_loaded``.
"""

from __future__ import annotations

import importlib
import os

AUTOLOAD_ENV = "PT_HPU_AUTOLOAD"
BRIDGE_MODULE = "habana_frameworks.torch"

is_loaded = False  # set by habana_frameworks.torch when it is imported, whichever way


def is_autoload_enabled() -> bool:
    raw = os.environ.get(AUTOLOAD_ENV, "-1")
    if raw == "1":
        return True
    if raw == "0":
        return False
    return os.environ.get("PT_HPU_LAZY_MODE", "1") != "1"


def __autoload() -> None:
    """The entry point. Loading twice is a no-op (an explicit import may have come first)."""
    if is_loaded or not is_autoload_enabled():
        return
    importlib.import_module(BRIDGE_MODULE)
