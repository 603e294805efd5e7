"""The keys ``torch.hpu.memory_stats()`` returns per ../shared/hpu-api.md: what the HPU tests expect to see
in a record's raw memory figures. Written down once here, independently of the test double."""

from __future__ import annotations

HPU_MEMORY_KEYS = frozenset(
    {
        "Limit",
        "InUse",
        "MaxInUse",
        "NumAllocs",
        "NumFrees",
        "ActiveAllocs",
        "MaxAllocSize",
        "TotalSystemAllocs",
        "TotalSystemFrees",
        "TotalActiveAllocs",
    }
)
