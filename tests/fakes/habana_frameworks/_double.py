"""The double's own state and knobs (not part of the Habana API): configuration, call log, memory.

Knobs, all namespaced so they can never collide with real Habana variables:
- ``HPUBENCH_FAKE_HPU_NAME``: what ``get_device_name()`` returns (default ``GAUDI2``).
- ``HPUBENCH_FAKE_HPU_COUNT``: how many devices there are (default 8; 0 = none).
- ``HPUBENCH_FAKE_HPU_CALL_LOG``: a file every API call appends ``name<TAB>detail`` to, so tests in
  another process (a worker) can assert which calls happened and in which order.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
from types import ModuleType
from typing import Any

import psutil

from habana_frameworks import _lifecycle

NAME_ENV = "HPUBENCH_FAKE_HPU_NAME"
COUNT_ENV = "HPUBENCH_FAKE_HPU_COUNT"
CALL_LOG_ENV = "HPUBENCH_FAKE_HPU_CALL_LOG"

GIB = 1024**3
# HBM per module: Gaudi 32 GiB, Gaudi2 96 GiB, Gaudi3 128 GiB.
LIMIT_BYTES_BY_GENERATION = {"GAUDI3": 128 * GIB, "GAUDI2": 96 * GIB, "GAUDI": 32 * GIB}

# Every API call of this process, in order: (name, detail). Re-exported as core.CALLS.
CALLS: list[tuple[str, str]] = []


def record(name: str, detail: str = "") -> None:
    CALLS.append((name, detail))
    path = os.environ.get(CALL_LOG_ENV)
    if path:
        line = f"{name}\t{detail}".replace("\n", " ")
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    _lifecycle.on_call(name, detail)  # C3: may refuse a device call in a forked child


def device_name() -> str:
    return os.environ.get(NAME_ENV, "GAUDI2") if device_count() > 0 else ""


def device_count() -> int:
    raw = os.environ.get(COUNT_ENV, "8")
    try:
        count = int(raw)
    except ValueError:
        raise ValueError(f"{COUNT_ENV}={raw!r} is not an integer") from None
    if count < 0:
        raise ValueError(f"{COUNT_ENV}={raw!r} must be >= 0")
    return count


def is_first_generation() -> bool:
    name = device_name().upper()
    return name.startswith("GAUDI") and not name.startswith(("GAUDI2", "GAUDI3"))


HBM_ENV = "HPUBENCH_FAKE_HPU_HBM_BYTES"


def limit_bytes() -> int:
    """The generation's HBM, or ``HPUBENCH_FAKE_HPU_HBM_BYTES`` (a small card, to test running out)."""
    raw = os.environ.get(HBM_ENV)
    if raw:
        return int(raw)
    name = device_name().upper()
    for prefix, limit in LIMIT_BYTES_BY_GENERATION.items():
        if name.startswith(prefix):
            return limit
    return LIMIT_BYTES_BY_GENERATION["GAUDI2"]


class _Memory:
    """Host memory stands in for device memory: InUse is this process's resident set, MaxInUse the
    largest resident set sampled (at every memory query, synchronize and mark_step) since the last reset.
    Allocation counters are not observable from CPU torch, so they stay 0 rather than being invented."""

    def __init__(self) -> None:
        self.peak = 0

    def sample(self) -> int:
        rss = psutil.Process().memory_info().rss
        self.peak = max(self.peak, rss)
        return rss

    def reset_peak(self) -> None:
        self.peak = 0
        self.sample()

    def stats(self) -> dict[str, int]:
        in_use = self.sample()
        return {
            "Limit": limit_bytes(),
            "InUse": in_use,
            "MaxInUse": self.peak,
            "NumAllocs": 0,
            "NumFrees": 0,
            "ActiveAllocs": 0,
            "MaxAllocSize": 0,
            "TotalSystemAllocs": 0,
            "TotalSystemFrees": 0,
            "TotalActiveAllocs": 0,
        }


MEMORY = _Memory()


# ---- events the bridge's metrics count (hpu.metrics) ------------------------------------------------------
# kind -> callbacks of the metrics subscribed now; a metric sees only the events after it subscribed.
_SUBSCRIBERS: dict[str, list[Any]] = {}


def subscribe(kind: str, callback: Any) -> None:
    _SUBSCRIBERS.setdefault(kind, []).append(callback)


def unsubscribe(kind: str, callback: Any) -> None:
    if callback in _SUBSCRIBERS.get(kind, []):
        _SUBSCRIBERS[kind].remove(callback)


def emit_graph_compilation(recipe: str, duration_us: int = 0) -> None:
    """One graph compiled (hpu-api.md C7): what every graph path of the double calls."""
    record("graph_compilation", recipe)
    for callback in list(_SUBSCRIBERS.get("graph_compilation", [])):
        callback({"duration": duration_us, "recipe": recipe})


class LazyGraphs:
    """Lazy mode's graph cache, modelled on what the double can see: the input shapes of every module call
    since the last ``mark_step``. ``mark_step`` compiles the accumulated graph when that signature is new
    (C7: an input shape change compiles a new graph), and runs the cached one otherwise."""

    def __init__(self) -> None:
        self.pending: list[tuple[Any, ...]] = []
        self.seen: set[tuple[Any, ...]] = set()

    def note_call(self, module: Any, args: tuple[Any, ...]) -> None:
        shapes = tuple(tuple(a.shape) for a in args if hasattr(a, "shape"))
        self.pending.append((type(module).__name__, shapes))

    def mark_step(self) -> None:
        signature = tuple(self.pending)
        self.pending.clear()
        if signature not in self.seen:
            self.seen.add(signature)
            emit_graph_compilation(f"lazy_graph_{len(self.seen)}")


LAZY_GRAPHS = LazyGraphs()


# ---- torch.compile(backend="hpu_backend") ------------------------------------------------------------------
COMPILE_BACKEND = "hpu_backend"
_DYNAMO = "torch._dynamo"


def hpu_backend(gm: Any, example_inputs: list[Any]) -> Any:
    """Runs the graph dynamo captured as it is: the double has no graph compiler. Eager mode only (C6)."""
    core = sys.modules.get("habana_frameworks.torch.core")
    if core is not None and getattr(core, "_LAZY", False):
        record("dynamo.hpu_backend", "refused: lazy mode")
        raise RuntimeError(
            "hpu_backend needs eager mode: set PT_HPU_LAZY_MODE=0 before the bridge is imported"
        )
    record("dynamo.hpu_backend", f"nodes={len(gm.graph.nodes)}")
    emit_graph_compilation(f"hpu_backend_{len(gm.graph.nodes)}_nodes")
    return gm.forward


def register_compile_backend() -> None:
    from torch._dynamo.backends import registry

    # A re-imported double (tests do that per mode) replaces its predecessor's entry.
    registry._COMPILER_FNS.pop(COMPILE_BACKEND, None)
    registry.register_backend(hpu_backend, name=COMPILE_BACKEND)


class _RegisterAfterDynamoImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Registers the backend right after torch._dynamo is first imported.

    torch._dynamo takes seconds to import; importing it eagerly with the bridge would slow every process
    that uses the double, while only compile-mode processes need the backend.
    """

    hpubench_double_hook = _DYNAMO

    def __init__(self) -> None:
        self._inner: importlib.abc.Loader | None = None

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _DYNAMO:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                self._inner, spec.loader = spec.loader, self
                return spec
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        assert self._inner is not None
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        assert self._inner is not None
        self._inner.exec_module(module)
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        # The double currently importable, not necessarily the one that installed this hook; none at all
        # (a test took it off sys.path) must not break torch._dynamo for everyone else.
        try:
            current = importlib.import_module("habana_frameworks._double")
        except ImportError:
            return
        current.register_compile_backend()


def provide_compile_backend() -> None:
    if _DYNAMO in sys.modules:
        register_compile_backend()
    elif not any(getattr(f, "hpubench_double_hook", None) == _DYNAMO for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterDynamoImport())
