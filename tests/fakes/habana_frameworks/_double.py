"""The double's own state and knobs (not part of the Habana API): configuration, call log, memory.

Knobs, all namespaced so they can never collide with real Habana variables:
- ``HPUBENCH_FAKE_HPU_NAME``: what ``get_device_name()`` returns (default ``GAUDI2``).
- ``HPUBENCH_FAKE_HPU_COUNT``: how many devices there are (default 8; 0 = none).
- ``HPUBENCH_FAKE_HPU_CALL_LOG``: a file every API call appends ``name<TAB>detail`` to, so tests in
  another process (a worker) can assert which calls happened and in which order.
- ``HPUBENCH_FAKE_HPU_REQUIRED_TORCH``: the torch major.minor the bridge was built for (its
  ``required_version.txt``); default: the installed torch's, as a matching install has it.
- ``HPUBENCH_FAKE_HPU_TORCH_BUILD``: ``fork`` (default: the installed torch stands in for Habana's torch
  build) or ``stock`` (a torch from PyPI, which the bridge refuses in lazy mode).
- ``HPUBENCH_FAKE_HPU_COMPILE_MS``: what one graph compilation costs, in milliseconds of the calling
  thread (default 20), so a compilation inside a measured window slows it as on a Gaudi.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import time
from types import ModuleType
from typing import Any

import psutil

from habana_frameworks import _lifecycle

NAME_ENV = "HPUBENCH_FAKE_HPU_NAME"
COUNT_ENV = "HPUBENCH_FAKE_HPU_COUNT"
CALL_LOG_ENV = "HPUBENCH_FAKE_HPU_CALL_LOG"

GIB = 1024**3
# memory_stats()["Limit"]: the allocator's pool, below the HBM (32 / 96 / 128 GiB). As logged by
# optimum-habana (``total_memory_available (GB)``, bytes / 1024**3 rounded to 2 places): Gaudi 29.85
# (optimum-habana PR #89), Gaudi2 94.62 (ray's intel_gaudi llama example), Gaudi3 126.06 (Intel Gaudi
# docs 1.23, IBM Cloud quick start). docs/hpu-contract.md C8.
LIMIT_BYTES_BY_GENERATION = {
    "GAUDI3": int(126.06 * GIB),
    "GAUDI2": int(94.62 * GIB),
    "GAUDI": int(29.85 * GIB),
}
REQUIRED_TORCH_ENV = "HPUBENCH_FAKE_HPU_REQUIRED_TORCH"
TORCH_BUILD_ENV = "HPUBENCH_FAKE_HPU_TORCH_BUILD"
COMPILE_MS_ENV = "HPUBENCH_FAKE_HPU_COMPILE_MS"

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


def torch_version() -> str:
    """The running torch's version, from its metadata (the double must not import torch to say it)."""
    from importlib import metadata

    return metadata.version("torch")


def required_torch_version() -> str:
    """The torch major.minor this bridge was built for (the real one's ``required_version.txt``)."""
    raw = os.environ.get(REQUIRED_TORCH_ENV)
    if raw:
        return raw.strip()
    major, minor = torch_version().split(".")[:2]
    return f"{major}.{minor}"


def torch_is_fork() -> bool:
    """Whether the running torch counts as Habana's build (the bridge: local label starting "git")."""
    raw = os.environ.get(TORCH_BUILD_ENV, "fork")
    if raw not in ("fork", "stock"):
        raise ValueError(f"{TORCH_BUILD_ENV}={raw!r} must be fork or stock")
    return raw == "fork"


def compile_cost_s() -> float:
    raw = os.environ.get(COMPILE_MS_ENV, "20")
    try:
        return max(0.0, float(raw)) / 1000.0
    except ValueError:
        raise ValueError(f"{COMPILE_MS_ENV}={raw!r} is not a number of milliseconds") from None


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


def emit_graph_compilation(recipe: str) -> None:
    """One graph compiled (C7): what every graph path of the double calls. It costs the calling thread
    ``compile_cost_s()`` of busy time (C19: a compilation in a measured window slows it, as on a
    Gaudi) and reports that time in microseconds, as the bridge's ``TotalTime`` does."""
    record("graph_compilation", recipe)
    t0 = time.perf_counter()
    deadline = t0 + compile_cost_s()
    while time.perf_counter() < deadline:
        pass
    duration_us = int((time.perf_counter() - t0) * 1e6)
    for callback in list(_SUBSCRIBERS.get("graph_compilation", [])):
        callback({"duration": duration_us, "recipe": recipe})


class LazyGraphs:
    """Lazy mode's graph cache, modelled on what the double can see: the input shapes of every module call
    since the last step marker. A step marker compiles the accumulated graph when its signature is new
    (C7: an input shape change compiles a new graph) and runs the cached one otherwise.

    ``mark_step`` is one step marker; ``hpu.synchronize()`` and ``Event.record()`` run one too (C16), which
    cuts a step's graph where they stand: the part before them is a graph of its own (its signature says
    what cut it), so a sync inside a step compiles graphs a step without it never needs.
    """

    def __init__(self) -> None:
        self.pending: list[tuple[Any, ...]] = []
        self.seen: set[tuple[Any, ...]] = set()
        self.capturing = False  # an HPU graph capture is open until the next mark_step (C17)

    def note_call(self, module: Any, args: tuple[Any, ...]) -> None:
        """A module call on the device joins the pending graph (one on the host or on meta does not)."""
        if not any(getattr(getattr(a, "device", None), "type", None) == "hpu" for a in args):
            return
        shapes = tuple(tuple(a.shape) for a in args if hasattr(a, "shape"))
        self.pending.append((type(module).__name__, shapes))

    def step_marker(self, cause: str) -> None:
        """Run what accumulated since the last step marker (compiling it first if new); none is free."""
        if cause == "mark_step":
            self.capturing = False
        if not self.pending:
            return
        signature = (cause, tuple(self.pending))
        self.pending.clear()
        record("lazy.step_marker", cause)
        if signature not in self.seen:
            self.seen.add(signature)
            emit_graph_compilation(f"lazy_graph_{len(self.seen)}")

    def mark_step(self) -> None:
        self.step_marker("mark_step")


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
