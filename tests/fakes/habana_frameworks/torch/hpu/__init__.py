"""Double of ``habana_frameworks.torch.hpu``: detection, device selection, sync, memory, events, graphs.

The graph APIs (``wrap_in_hpu_graph``, ``ModuleCacher``, ``make_graphed_callables``, ``HPUGraph``,
``graph``) are defined only when the process is in lazy mode, as in the 1.19 bridge, so code that probes
for them sees exactly what it would see on a Gaudi in eager mode.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

from habana_frameworks import _cards, _double, _hbm, _runtime, _tensor
from habana_frameworks._double import MEMORY, record
from habana_frameworks.torch import core as _core

_current_device = 0


def _index(device: Any) -> int:
    if device is None:
        return _current_device
    if isinstance(device, int):
        return device
    text = str(device)  # "hpu", "hpu:1" or a torch.device
    return int(text.split(":", 1)[1]) if ":" in text else _current_device


# ---- detection ----------------------------------------------------------------------------------------
def is_available() -> bool:
    record("hpu.is_available")
    try:
        return _cards.visible_count() > 0
    except Exception:
        return False


def device_count() -> int:
    """The visible modules that exist (C4: ``HABANA_VISIBLE_MODULES``, else the whole box)."""
    record("hpu.device_count")
    return _cards.visible_count()


def get_device_name(device: Any = None) -> str:
    record("hpu.get_device_name", "" if device is None else str(device))
    return _double.device_name()


def current_device() -> int:
    record("hpu.current_device")
    return _current_device


def set_device(device: Any) -> None:
    global _current_device
    index = _index(device)
    record("hpu.set_device", str(index))
    count = _cards.visible_count()
    if not 0 <= index < count:
        raise RuntimeError(f"invalid HPU device index {index}: {count} device(s) present")
    _cards.acquire()
    _current_device = index
    _tensor.set_current_index(index)
    _runtime.set_current_device(index)


def _lazy_init() -> None:
    """What torch calls before it makes the first tensor on ``"hpu"`` in this process: initialises the
    device (contract C3: refused in a child forked after the parent initialised it)."""
    record("hpu._lazy_init")


def synchronize(device: Any = None) -> None:
    record("hpu.synchronize")
    _cards.acquire()
    _hbm.check_fits()


# ---- memory -------------------------------------------------------------------------------------------
def memory_stats(device: Any = None) -> dict[str, int]:
    record("hpu.memory_stats")
    _cards.acquire()
    return MEMORY.stats()


def memory_allocated(device: Any = None) -> int:
    record("hpu.memory_allocated")
    _cards.acquire()
    return MEMORY.stats()["InUse"]


def max_memory_allocated(device: Any = None) -> int:
    record("hpu.max_memory_allocated")
    _cards.acquire()
    return MEMORY.stats()["MaxInUse"]


def reset_peak_memory_stats(device: Any = None) -> None:
    record("hpu.reset_peak_memory_stats")
    _cards.acquire()
    MEMORY.reset_peak()


def memory_reserved(device: Any = None) -> int:
    record("hpu.memory_reserved")
    _cards.acquire()
    return MEMORY.stats()["Limit"]


def mem_get_info(device: Any = None) -> tuple[int, int]:
    record("hpu.mem_get_info")
    _cards.acquire()
    stats = MEMORY.stats()
    return stats["Limit"] - stats["InUse"], stats["Limit"]


# ---- timing -------------------------------------------------------------------------------------------
class Event:
    """Host wall-clock events: work runs synchronously on the host, so record time is completion time."""

    def __init__(self, enable_timing: bool = False) -> None:
        record("hpu.Event", f"enable_timing={enable_timing}")
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Any = None) -> None:
        record("hpu.Event.record")
        _cards.acquire()
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        record("hpu.Event.synchronize")

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event to ``end_event``, like torch.cuda.Event."""
        record("hpu.Event.elapsed_time")
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("both events must be created with enable_timing=True")
        if self._time is None or end_event._time is None:
            raise RuntimeError("both events must be recorded before elapsed_time")
        return (end_event._time - self._time) * 1000.0


# ---- HPU graphs (lazy mode only) ------------------------------------------------------------------------
def _wrap_in_hpu_graph(
    module: Any,
    asynchronous: bool = False,
    disable_tensor_cache: bool = False,
    dry_run: bool = False,
    max_graphs: int | None = None,
) -> Any:
    """Returns the same module with ``forward`` replaced, as the bridge does; no graph is recorded."""
    record("hpu.wrap_in_hpu_graph", f"asynchronous={asynchronous} max_graphs={max_graphs}")
    original = module.forward

    @functools.wraps(original)
    def forward(*args: Any, **kwargs: Any) -> Any:
        record("hpu.graph_forward", "inference")
        return original(*args, **kwargs)

    module.forward = forward
    return module


class _ModuleCacher:
    """Training-graph cache: captures per input-shape signature when training, grad enabled, lazy mode.

    The double keeps the bookkeeping (capture / replay / bypass, bounded by ``max_graphs``) and runs the
    original forward every time, so results are those of the unwrapped model.
    """

    def __init__(self, max_graphs: int = 10) -> None:
        record("hpu.ModuleCacher", f"max_graphs={max_graphs}")
        self.max_graphs = max_graphs

    def __call__(self, model: Any, inplace: bool = True) -> Any:
        import torch

        record("hpu.ModuleCacher.__call__", f"inplace={inplace}")
        target = model if inplace else copy.deepcopy(model)
        original = target.forward
        seen: set[tuple[Any, ...]] = set()
        max_graphs = self.max_graphs

        @functools.wraps(original)
        def forward(*args: Any, **kwargs: Any) -> Any:
            key = tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__ for a in args)
            if not (target.training and torch.is_grad_enabled() and _core._LAZY):
                record("hpu.cached_forward", "bypass")
            elif key in seen:
                record("hpu.cached_forward", "replay")
            elif len(seen) < max_graphs:
                seen.add(key)
                record("hpu.cached_forward", "capture")
                _double.emit_graph_compilation(f"module_cacher_{len(seen)}")
            else:
                record("hpu.cached_forward", "bypass (max_graphs reached)")
            return original(*args, **kwargs)

        target.forward = forward
        return target


def _make_graphed_callables(
    callables: Any, sample_args: Any, num_warmup_iters: int = 3, allow_unused_input: bool = False
) -> Any:
    """Returns the callables unchanged (same container shape): the double runs them directly."""
    record("hpu.make_graphed_callables", f"num_warmup_iters={num_warmup_iters}")
    return callables


class _HPUGraph:
    """Capture bookkeeping only: the double cannot replay recorded device work, so ``replay`` refuses
    rather than silently returning stale outputs."""

    def __init__(self) -> None:
        record("hpu.HPUGraph")
        self.captured = False
        self._capturing = False

    def capture_begin(self) -> None:
        record("hpu.HPUGraph.capture_begin")
        self._capturing = True

    def capture_end(self) -> None:
        record("hpu.HPUGraph.capture_end")
        self._capturing = False
        self.captured = True

    def replay(self) -> None:
        record("hpu.HPUGraph.replay")
        raise NotImplementedError(
            "the habana_frameworks test double cannot replay a captured HPUGraph (no device work is "
            "recorded); use ModuleCacher or wrap_in_hpu_graph, which the double runs eagerly"
        )


@contextlib.contextmanager
def _graph(hpu_graph: _HPUGraph, *args: Any, **kwargs: Any) -> Iterator[_HPUGraph]:
    record("hpu.graph")
    hpu_graph.capture_begin()
    try:
        yield hpu_graph
    finally:
        hpu_graph.capture_end()


if _core._LAZY:
    wrap_in_hpu_graph: Callable[..., Any] = _wrap_in_hpu_graph
    ModuleCacher = _ModuleCacher
    make_graphed_callables: Callable[..., Any] = _make_graphed_callables
    HPUGraph = _HPUGraph
    graph = _graph
