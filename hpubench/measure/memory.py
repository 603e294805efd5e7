"""One memory schema for every accelerator, keeping the device's own dict beside it.

Normalised fields let a report compare peaks across HPU, CUDA and CPU; the raw dict keeps what each
device actually reported (on HPU the exact key set of ``hpu.memory_stats()``), so nothing is lost.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class MemoryStats:
    source: str  # where the figures came from, e.g. "hpu.memory_stats", "torch.cuda.memory_stats", "process"
    peak_allocated_bytes: int | None = None
    in_use_bytes: int | None = None
    limit_bytes: int | None = None
    num_allocs: int | None = None
    num_frees: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryStats:
        return cls(**data)
