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


@dataclass(frozen=True)
class Inventory:
    devices: tuple[DeviceInfo, ...]

    def count(self, accelerator: str) -> int:
        return next((d.count for d in self.devices if d.accelerator == accelerator), 0)

    def device_name(self, accelerator: str) -> str:
        return next((d.device_name for d in self.devices if d.accelerator == accelerator), "")

    def present(self) -> list[str]:
        return [d.accelerator for d in self.devices if d.count > 0]

    def to_dict(self) -> dict[str, Any]:
        return {d.accelerator: {"count": d.count, "device_name": d.device_name} for d in self.devices}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Inventory:
        return cls(
            tuple(
                DeviceInfo(name, int(v["count"]), str(v.get("device_name", ""))) for name, v in data.items()
            )
        )
