"""The Gaudi bridge at run time: loading ``habana_frameworks`` and reading the device through it.

Detection, device selection, lazy vs eager mode read back from the bridge (C6), ``mark_step``, memory
statistics, release (C5), the hccl and profiler registrations and the versions; ``DeviceSession`` holds
what one process knows of its device (set up here or not, the mode read once). ``HPUAccelerator``'s
hooks call here; kept apart from ``hpu.py`` so the hook surface stays one short class.

Every ``habana_frameworks`` import here is deferred to the call: the package is optional, and the bridge
reads ``PT_HPU_LAZY_MODE`` once when it is first imported, so importing it at module level would fix the
execution mode for the whole process before the worker has set the environment for its cell. torch is
deferred too: the accelerator modules stay torch-free at import (``base.py``). Nothing is cached at module
level: the call-time imports find whatever bridge the process has loaded.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from importlib import metadata
from types import ModuleType
from typing import TYPE_CHECKING, Any

from hpubench.measure.memory import MemoryStats

if TYPE_CHECKING:
    import torch

BRIDGE_MODULE = "habana_frameworks.torch"
# The bridge's exit-time cleanup: what its atexit handler runs (read from the bridge's sources, not in
# hpu-api.md, so it may be missing: then only the synchronize runs).
BRIDGE_CLEANUP = ("habana_frameworks.torch._hpu_C", "cleanup")


def hpu_api() -> ModuleType:
    """``habana_frameworks.torch.hpu``: detection, device choice, synchronize, memory, graph APIs."""
    from habana_frameworks.torch import hpu  # deferred: optional; importing it fixes the mode (docstring)

    return hpu


def core_api() -> ModuleType:
    """``habana_frameworks.torch.core``: ``is_lazy``, ``mark_step``; importing it registers "hpu"."""
    import habana_frameworks.torch.core as htcore  # deferred: optional; fixes the mode (docstring)

    return htcore


def bridge_loaded() -> bool:
    """Whether this process has imported the bridge (without importing it to find out)."""
    return BRIDGE_MODULE in sys.modules


# ---- detection -----------------------------------------------------------------------------------------
_IMPORT_ERROR: list[str] = []  # why the bridge would not load in this process, once it was tried


def is_available() -> bool:
    """Never raises: a machine without the Habana software simply has no HPU. A bridge that is installed
    but refuses to load (its torch pin, lazy mode on a stock torch: C12; a non-integer
    ``PT_HPU_LAZY_MODE``: C13) keeps its reason for ``unavailable_reason``."""
    try:
        return bool(hpu_api().is_available())
    except ImportError:
        return False
    except Exception as exc:
        _IMPORT_ERROR[:] = [f"{type(exc).__name__}: {exc}"]
        return False


def unavailable_reason() -> str | None:
    """The bridge's own words when it was installed but would not load here; None otherwise."""
    return _IMPORT_ERROR[0] if _IMPORT_ERROR else None


def device_count() -> int:
    try:
        hpu = hpu_api()
    except ImportError:
        return 0
    return int(hpu.device_count())


def device_name() -> str:
    # The contract documents get_device_name() without arguments; all modules in a box are alike.
    return str(hpu_api().get_device_name())


# ---- device and mode -----------------------------------------------------------------------------------
def torch_device(index: int) -> torch.device:
    core_api()  # registers the "hpu" device type
    import torch  # deferred: accelerator modules stay torch-free at import (base.py)

    return torch.device("hpu", index)


def host_device() -> torch.device:
    """The host: torch refuses a Generator on HPU (contract C1); batches are drawn there and moved."""
    import torch  # deferred: accelerator modules stay torch-free at import (base.py)

    return torch.device("cpu")


def select_device(index: int) -> bool:
    """Make ``index`` this process's device; returns whether the bridge runs lazy (read once, here)."""
    htcore, hpu = core_api(), hpu_api()
    lazy = bool(htcore.is_lazy())
    hpu.set_device(index)
    return lazy


def is_lazy() -> bool:
    return bool(core_api().is_lazy())


def mode_in_force(requested: str) -> str:
    """Read back from the bridge: an inherited PT_HPU_LAZY_MODE or a release default can override us.

    The bridge only knows lazy or not; "compile" is eager mode plus torch.compile, so it is reported as
    requested when the bridge is eager.
    """
    if core_api().is_lazy():
        return "lazy"
    return "compile" if requested == "compile" else "eager"


def mark_step() -> None:
    """Lazy mode only runs the accumulated graph at ``mark_step``: without it nothing executes."""
    core_api().mark_step()


def synchronize() -> None:
    hpu_api().synchronize()


def release_device() -> None:
    """Drain the device, then run the bridge's exit-time cleanup, which ``os._exit`` would skip (C5).

    hpu-api.md documents no release call, so this is ``hpu.synchronize()`` (work still queued finishes)
    and ``habana_frameworks.torch._hpu_C.cleanup()``, which the bridge registers to run at interpreter
    exit, when the bridge has it.
    """
    hpu = hpu_api()
    try:
        hpu.synchronize()
    finally:
        module, name = BRIDGE_CLEANUP
        cleanup = None
        with contextlib.suppress(ImportError):
            cleanup = getattr(importlib.import_module(module), name, None)
        if cleanup is not None:
            cleanup()


class DeviceSession:
    """This process's use of its Gaudi device: whether it set the device up here, and the mode read once.

    The step hooks ask ``is_lazy`` every step; the bridge is asked once (at ``setup`` or the first ask).
    """

    def __init__(self) -> None:
        self.lazy: bool | None = None
        self.set_up = False

    def setup(self, index: int) -> None:
        """Select the device and read the mode once: the step hooks must not ask the bridge every step."""
        self.lazy = select_device(index)
        self.set_up = True

    def is_lazy(self) -> bool:
        if self.lazy is None:
            self.lazy = is_lazy()
        return self.lazy

    def mark_step_if_lazy(self) -> None:
        """Lazy mode only runs the accumulated graph at ``mark_step``: without it nothing executes."""
        if self.is_lazy():
            mark_step()

    def release(self) -> None:
        """``release_device``, only for a device this session set up: a process that never used the
        device must not acquire it just to give it back."""
        if not self.set_up or not bridge_loaded():
            return
        self.set_up = False
        release_device()


# ---- memory --------------------------------------------------------------------------------------------
def memory_stats() -> MemoryStats:
    raw = dict(hpu_api().memory_stats())
    return MemoryStats(
        source="hpu.memory_stats",
        peak_allocated_bytes=raw.get("MaxInUse"),
        in_use_bytes=raw.get("InUse"),
        limit_bytes=raw.get("Limit"),
        num_allocs=raw.get("NumAllocs"),
        num_frees=raw.get("NumFrees"),
        raw=raw,
    )


def reset_peak_memory_stats() -> None:
    hpu_api().reset_peak_memory_stats()


# ---- registrations and versions ------------------------------------------------------------------------
def register_hccl() -> None:
    """Importing the bridge's distributed module registers the "hccl" backend (contract C11)."""
    import habana_frameworks.torch.distributed.hccl  # noqa: F401  deferred: optional; fixes the mode


def profiler_activities() -> tuple[list[Any], list[str]]:
    """CPU and, once the bridge has added it, ``ProfilerActivity.HPU``; a note where it is missing."""
    core_api()  # the bridge adds ProfilerActivity.HPU
    from torch.profiler import ProfilerActivity  # deferred: torch-free at import (base.py)

    hpu = getattr(ProfilerActivity, "HPU", None)
    if hpu is None:
        note = "torch.profiler.ProfilerActivity has no HPU member: only host (CPU) activity traced"
        return [ProfilerActivity.CPU], [note]
    return [ProfilerActivity.CPU, hpu], []


def software_versions() -> dict[str, str]:
    """Versions, with the test double marked so its figures can never pass as real HPU results."""
    import torch  # deferred: accelerator modules stay torch-free at import (base.py)

    versions = {"torch": torch.__version__}
    try:
        import habana_frameworks  # deferred: optional; only the package, the bridge is next
        import habana_frameworks.torch as ht  # deferred: optional; fixes the mode (docstring)
    except ImportError:
        versions["habana_frameworks"] = "not installed"
        return versions
    version = getattr(ht, "__version__", None)
    if version is None:
        try:
            version = metadata.version("habana-torch-plugin")
        except metadata.PackageNotFoundError:
            version = "unknown"
    if getattr(habana_frameworks, "__hpubench_test_double__", False):
        version = f"{version} (test double)"
    versions["habana_frameworks"] = str(version)
    return versions
