"""Double of ``habana_frameworks.torch.hpu``: detection, device selection, sync, memory, events, graphs.

The graph APIs (``wrap_in_hpu_graph``, ``ModuleCacher``, ``make_graphed_callables``, ``HPUGraph``,
``graph``) are defined only when the process is in lazy mode, as in the 1.19 bridge, so code that probes
for them sees exactly what it would see on a Gaudi in eager mode.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

from habana_frameworks import _cards, _double, _hbm
from habana_frameworks._double import MEMORY, record
from habana_frameworks.torch import core as _core

_current_device = 0
_device_count: int | None = None  # the bridge caches it per process


def _index(device: Any) -> int:
    if device is None:
        return _current_device
    if isinstance(device, int):
        return device
    text = str(device)  # "hpu", "hpu:1" or a torch.device
    return int(text.split(":", 1)[1]) if ":" in text else _current_device


def _init(name: str, detail: str = "") -> None:
    """``hpu.init()``, which the bridge's Python layer runs before a device call: acquires the card."""
    record(name, detail)
    _cards.acquire()


def _check_index(device: Any) -> None:
    """The bridge checks an index against the host-wide count after acquiring, and otherwise ignores it
    (one device per process: "We don't support index addresed device", ``bindings.cpp``)."""
    index = _index(device)
    if index < 0 or index >= device_count():
        raise AssertionError("Invalid device id")


# ---- detection ----------------------------------------------------------------------------------------
def is_available() -> bool:
    """Never raises; opens a Synapse session (C3: detection counts as activity)."""
    record("hpu.is_available")
    return _double.device_count() > 0


def device_count() -> int:
    """Every module of the box, cached (C15: ``synDeviceGetCount``; ``HABANA_VISIBLE_MODULES`` does not
    narrow it)."""
    global _device_count
    record("hpu.device_count")
    if _device_count is None:
        _device_count = _double.device_count()
    return _device_count


def get_device_name(device: Any = None) -> str:
    if _double.device_count() == 0:
        warnings.warn("Device not available", stacklevel=2)
        return ""
    _init("hpu.get_device_name", "" if device is None else str(device))
    _check_index(device)
    return _double.device_name()


def current_device() -> int:
    _init("hpu.current_device")
    return 0


def set_device(device: Any) -> None:
    """The bridge's ``set_device``: it acquires nothing, it picks ``HLS_MODULE_ID`` (C15). With
    ``HLS_MODULE_ID`` already set the index is ignored and the process stays on that module; with neither
    variable and fewer than 8 modules only index 0 is accepted."""
    global _current_device
    index = _index(device)
    record("hpu.set_device", str(index))
    available = _cards.visible_modules()
    if index not in available and index > len(available):
        raise AssertionError(f"Trying to open device with idx={index} when only {available} are avaliable)")
    raw = os.environ.get(_cards.MODULE_ENV, "")
    current = int(raw) if raw else -1
    if current >= 0:
        for position in range(device_count()):
            if available[position] == current:
                index = position
                break
        assert available[index] == current, (
            f"Requested module_id={available[index]} is different from current_module_id={current} which "
            "was previously set."
        )
    if current == -1 and _cards.VISIBLE_ENV not in os.environ and device_count() < 8:
        assert index == 0, f"As {_cards.VISIBLE_ENV} is not provided, the only supported device idx is 0."
    else:
        os.environ[_cards.MODULE_ENV] = str(available[index])
    _current_device = index


def _lazy_init() -> None:
    """What torch calls before it makes the first tensor on ``"hpu"`` in this process: initialises the
    device and acquires the card (contract C3: refused in a child forked after the parent initialised)."""
    _init("hpu._lazy_init")


def synchronize(device: Any = None) -> None:
    """Runs a step marker first, in lazy mode (C16: ``bindings.cpp`` "synchronous step marker")."""
    _init("hpu.synchronize")
    if _core._LAZY:
        _double.LAZY_GRAPHS.step_marker("synchronize")
    _hbm.check_fits()


# ---- memory -------------------------------------------------------------------------------------------
def memory_stats(device: Any = None) -> dict[str, int]:
    _init("hpu.memory_stats")
    _check_index(device)
    return MEMORY.stats()


def memory_allocated(device: Any = None) -> int:
    _init("hpu.memory_allocated")
    _check_index(device)
    return MEMORY.stats()["InUse"]


def max_memory_allocated(device: Any = None) -> int:
    _init("hpu.max_memory_allocated")
    _check_index(device)
    return MEMORY.stats()["MaxInUse"]


def reset_peak_memory_stats(device: Any = None) -> None:
    _init("hpu.reset_peak_memory_stats")
    _check_index(device)
    MEMORY.reset_peak()


def memory_reserved(device: Any = None) -> int:
    _init("hpu.memory_reserved")
    _check_index(device)
    return MEMORY.stats()["Limit"]


def mem_get_info(device: Any = None) -> tuple[int, int]:
    _init("hpu.mem_get_info")
    _check_index(device)
    stats = MEMORY.stats()
    return stats["Limit"] - stats["InUse"], stats["Limit"]


class Stream:
    """``hpu.Stream``: the double has one stream per device and runs work at once (torch's dynamo looks
    this class up wherever ``torch.hpu`` exists)."""

    def __init__(self, device: Any = None, priority: int = 0) -> None:
        record("hpu.Stream")
        self.device = device

    def synchronize(self) -> None:
        record("hpu.Stream.synchronize")

    def query(self) -> bool:
        return True


def current_stream(device: Any = None) -> Stream:
    return Stream(device)


# ---- timing -------------------------------------------------------------------------------------------
class Event:
    """Host wall-clock events: work runs synchronously on the host, so record time is completion time."""

    def __init__(self, enable_timing: bool = False) -> None:
        record("hpu.Event", f"enable_timing={enable_timing}")
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Any = None) -> None:
        """On the current stream (the default) a lazy-mode record runs a step marker first (C16:
        ``HPUEvent.cpp`` "step marker due to HPUEvent::record")."""
        _init("hpu.Event.record")
        if _core._LAZY:
            _double.LAZY_GRAPHS.step_marker("Event.record")
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        record("hpu.Event.synchronize")

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event to ``end_event``, like torch.cuda.Event."""
        record("hpu.Event.elapsed_time")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


# The bridge's ``from .metrics import *``: the global metrics start counting at this import (C19).
from habana_frameworks.torch.hpu import metrics  # noqa: E402, F401

# ---- HPU graphs (lazy mode only, as the bridge's ``if is_lazy(): from .graphs import *``) ------------------
if _core._LAZY:
    from habana_frameworks.torch.hpu.graphs import (  # noqa: F401  (the bridge re-exports them here)
        HPUGraph,
        ModuleCacher,
        graph,
        make_graphed_callables,
        wrap_in_hpu_graph,
    )
