"""Double of ``habana_frameworks.torch.hpu.metrics``: the bridge's metric API (hpu-api.md, C7).

As in the 1.19 bridge: the global metrics ``graph_compilation``, ``cpu_fallback`` and
``memory_defragmentation`` (``recipe_cache`` too when ``PT_HPU_ENABLE_CACHE_METRICS`` is true) are created
when this module is imported and count only the events after that; ``metric_global`` returns None for any
other name; ``metric_localcontext`` raises ``MetricNotFound`` for one and counts only inside its block;
``stats()`` returns a list of ``(tag, value)`` pairs. ``graph_compilation`` sees the double's compile
events (``_double.emit_graph_compilation``): lazy-mode graphs at ``mark_step``, HPU graph captures and
``hpu_backend`` compiles. The other metrics are registered but never see an event: the double has no CPU
fallback and no allocator to defragment.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from habana_frameworks import _double
from habana_frameworks._double import record
from habana_frameworks.torch.hpu.metrics.exceptions import MetricNotFound

__all__ = ["MetricNotFound", "metric_global", "metric_localcontext"]


class _Metric:
    """Counts the events of one kind from ``start()`` (called at creation) until ``stop()``."""

    kind = ""
    tags: tuple[str, ...] = ("TotalNumber",)

    def __init__(self) -> None:
        self._subscribed = False
        self.reset()
        self.start()

    def name(self) -> str:
        return self.kind

    def start(self) -> None:
        if not self._subscribed:
            _double.subscribe(self.kind, self._on_event)
            self._subscribed = True

    def stop(self) -> None:
        if self._subscribed:
            _double.unsubscribe(self.kind, self._on_event)
            self._subscribed = False

    def process(self) -> None:
        """Events are delivered as they happen here; the bridge pulls them in ``process``."""

    def reset(self) -> None:
        self._count = 0
        self._total_time = 0

    def _on_event(self, params: dict[str, Any]) -> None:
        self._count += 1
        self._total_time += int(params.get("duration", 0))

    def stats(self) -> list[tuple[str, Any]]:
        record("hpu.metrics.stats", self.kind)
        return [("TotalNumber", self._count)]


class _GraphCompilation(_Metric):
    kind = "graph_compilation"

    def stats(self) -> list[tuple[str, Any]]:
        record("hpu.metrics.stats", self.kind)
        avg = float(self._total_time) / self._count if self._count > 0 else 0
        return [("TotalNumber", self._count), ("TotalTime", self._total_time), ("AvgTime", avg)]


class _CpuFallback(_Metric):
    kind = "cpu_fallback"

    def stats(self) -> list[tuple[str, Any]]:
        record("hpu.metrics.stats", self.kind)
        return [("TotalNumber", self._count), ("FallbackOps", {})]


class _MemoryDefragmentation(_Metric):
    kind = "memory_defragmentation"

    def stats(self) -> list[tuple[str, Any]]:
        record("hpu.metrics.stats", self.kind)
        return [("TotalNumber", self._count), ("TotalSuccessful", 0), ("AvgTime", 0), ("MaxTime", 0)]


class _RecipeCache(_Metric):
    kind = "recipe_cache"

    def stats(self) -> list[tuple[str, Any]]:
        record("hpu.metrics.stats", self.kind)
        return [("TotalHit", 0), ("RecipeHit", {}), ("TotalMiss", 0), ("RecipeMiss", {})]


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("y", "yes", "t", "true", "on", "1")


_TYPES: dict[str, type[_Metric]] = {
    m.kind: m for m in (_GraphCompilation, _CpuFallback, _MemoryDefragmentation)
}
if _truthy(os.environ.get("PT_HPU_ENABLE_CACHE_METRICS")):
    _TYPES[_RecipeCache.kind] = _RecipeCache
_GLOBAL: dict[str, _Metric] = {name: cls() for name, cls in _TYPES.items()}
record("hpu.metrics.import", ",".join(_GLOBAL))


def metric_global(name: str) -> _Metric | None:
    """The process-wide metric of that name, counting since this module's import; None if unknown."""
    record("hpu.metrics.metric_global", name)
    return _GLOBAL.get(name)


@contextmanager
def metric_localcontext(name: str) -> Iterator[_Metric]:
    """A fresh metric counting only inside the block."""
    record("hpu.metrics.metric_localcontext", name)
    if name not in _TYPES:
        raise MetricNotFound(f"Metric with given name ({name}) doesn't exist.")
    metric = _TYPES[name]()
    try:
        yield metric
    finally:
        metric.stop()
