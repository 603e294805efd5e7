"""What this machine has. Run in a throw-away child: it imports device frameworks, which fix modes."""

from __future__ import annotations

from hpubench import accelerators
from hpubench.plan.inventory import DeviceInfo, Inventory


def detect() -> Inventory:
    found = []
    for name in accelerators.names():
        cls = accelerators.get(name)
        try:
            count = cls.device_count() if cls.is_available() else 0
            device_name = cls(0).device_name() if count else ""
        except Exception:  # a broken driver means "not usable here", never a crash of the harness
            count, device_name = 0, ""
        memory: tuple[int, bool] | None = None
        if count:
            try:
                memory = cls(0).memory_available()
            except Exception:  # unknown memory only costs the "cannot fit" check
                memory = None
        found.append(DeviceInfo(name, count, device_name, *(memory or (None, False))))
    return Inventory(tuple(found))
