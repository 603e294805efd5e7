"""Double of ``habana_frameworks.torch.core``: the execution mode, ``mark_step``, device registration
and the ``"hpu_backend"`` of torch.compile (which runs the captured graph as traced).

``PT_HPU_LAZY_MODE`` is read once, here, at import, like the bridge: ``"0"`` is eager (and
torch.compile), anything else, unset included, is lazy (the 1.19 default). Changing the variable later
has no effect in this process.
"""

from __future__ import annotations

import os
import sys

from habana_frameworks import _cards, _double, _generator, _hbm, _runtime, _tensor
from habana_frameworks._double import CALLS, LAZY_GRAPHS, provide_compile_backend, record

__all__ = ["CALLS", "is_lazy", "mark_step"]

_LAZY_MODE_RAW = os.environ.get("PT_HPU_LAZY_MODE")
_LAZY = _LAZY_MODE_RAW != "0"

# The bridge sets HABANA_PROFILE to its light profiler when the variable is unset at load (hpu-api.md,
# "Timing and profiling"): code reading it later never sees it unset. Remembered so that a test process
# purging the double can take back what the double set (``hpudouble.purge_double``).
PROFILE_ENV, PROFILE_DEFAULT = "HABANA_PROFILE", "profile_api_light"
PROFILE_SET_BY_BRIDGE = PROFILE_ENV not in os.environ
os.environ.setdefault(PROFILE_ENV, PROFILE_DEFAULT)


def is_lazy() -> bool:
    record("core.is_lazy", str(_LAZY))
    return _LAZY


def mark_step(device_str: str = "", sync: bool = False) -> None:
    """In lazy mode the real call runs the accumulated graph; here ops already ran eagerly on the host."""
    record("core.mark_step", "lazy" if _LAZY else "eager (no-op)")
    if _LAZY:
        _cards.acquire()
        LAZY_GRAPHS.mark_step()
        _hbm.check_fits()


def _register_torch_hpu() -> None:
    """The device type, as the bridge's library registers it: its runtime (device guard, hooks), the
    HPU kernels that make tensors on it (``_tensor``) and ``torch.hpu``."""
    import torch

    from habana_frameworks.torch import hpu

    # One device per process (C15): the bridge's device guard counts 1 and refuses any other index.
    _runtime.load(1 if _double.device_count() > 0 else 0)
    _tensor.install()

    try:
        torch._register_device_module("hpu", hpu)
    except RuntimeError:
        # Already registered by an earlier import of the double (tests re-import it per mode).
        torch.hpu = hpu
        sys.modules["torch.hpu"] = hpu


def _note_module_call(module: object, args: tuple[object, ...]) -> None:
    LAZY_GRAPHS.note_call(module, args)


def _watch_lazy_graphs() -> None:
    """Lazy mode: every module call's input shapes feed the graph signature ``mark_step`` compiles.

    One global forward pre-hook per process, owned by the double imported last (tests re-import it per
    mode): an eager import removes its predecessor's hook, so eager and compile runs carry none.
    """
    import torch.nn.modules.module as module_mod

    previous = getattr(module_mod, "_hpubench_double_lazy_hook", None)
    if previous is not None:
        previous.remove()
        module_mod._hpubench_double_lazy_hook = None
    if _LAZY:
        module_mod._hpubench_double_lazy_hook = module_mod.register_module_forward_pre_hook(_note_module_call)


record("core.import", f"PT_HPU_LAZY_MODE={_LAZY_MODE_RAW} lazy={_LAZY}")
_register_torch_hpu()
_generator.install()  # C1: the bridge's torch refuses a Generator on the HPU device
_watch_lazy_graphs()
provide_compile_backend()
