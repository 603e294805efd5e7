"""What accelerators this machine has: a pure record, detected in a child process, read by pure code.

Detection has to import torch (and, for HPU, habana_frameworks, which fixes the execution mode for the
whole process), so it runs in a throw-away child; everything that decides with the result stays pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DeviceInfo:
    accelerator: str
    count: int
    device_name: str  # e.g. "GAUDI2", "NVIDIA H100 80GB HBM3", "Intel(R) Xeon(R) ..." ; "" when none
    # Bytes a cell may use per device, when known (CPU: RAM available at detection); ``memory_shared``:
    # the devices are ranks sharing those bytes (CPU), so a cell's ranks divide them.
    memory_bytes: int | None = None
    memory_shared: bool = False


@dataclass(frozen=True)
class Inventory:
    devices: tuple[DeviceInfo, ...]

    def count(self, accelerator: str) -> int:
        return next((d.count for d in self.devices if d.accelerator == accelerator), 0)

    def device_name(self, accelerator: str) -> str:
        return next((d.device_name for d in self.devices if d.accelerator == accelerator), "")

    def memory_per_device(self, accelerator: str, devices: int) -> int | None:
        """Bytes one of ``devices`` ranks of a cell may use here; None when unknown."""
        info = next((d for d in self.devices if d.accelerator == accelerator), None)
        if info is None or info.memory_bytes is None:
            return None
        return info.memory_bytes // max(1, devices) if info.memory_shared else info.memory_bytes

    def shares_memory(self, accelerator: str) -> bool:
        """Whether the devices are ranks on one host (CPU): they divide its memory and cores."""
        return next((d.memory_shared for d in self.devices if d.accelerator == accelerator), False)

    def present(self) -> list[str]:
        return [d.accelerator for d in self.devices if d.count > 0]

    def to_dict(self) -> dict[str, Any]:
        """Memory appears only where known, so inventories of machines without it read as before."""
        out: dict[str, Any] = {}
        for d in self.devices:
            out[d.accelerator] = {"count": d.count, "device_name": d.device_name}
            if d.memory_bytes is not None:
                out[d.accelerator].update(memory_bytes=d.memory_bytes, memory_shared=d.memory_shared)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Inventory:
        return cls(
            tuple(
                DeviceInfo(
                    name,
                    int(v["count"]),
                    str(v.get("device_name", "")),
                    int(v["memory_bytes"]) if v.get("memory_bytes") is not None else None,
                    bool(v.get("memory_shared", False)),
                )
                for name, v in data.items()
            )
        )
