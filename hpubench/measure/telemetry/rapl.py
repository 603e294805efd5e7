"""CPU package energy from the Linux powercap RAPL interface (``/sys/class/powercap/intel-rapl:N``).

RAPL exposes cumulative energy counters, not power: power is the energy difference between two polls.
The counters wrap at ``max_energy_range_uj``; a poll every 100 ms sees at most one wrap (a wrap takes
minutes even at several hundred watts), so one correction per poll is exact. Only top-level ``package``
domains are summed: sub-zones (core, uncore, dram) and the ``psys`` platform domain overlap with them.
Since Linux 5.10 ``energy_uj`` is readable by root only (the PLATYPUS side channel), so on most machines
this source is absent unless the admin relaxed the permissions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import psutil

from hpubench.measure.telemetry.base import Reading, TelemetrySource, TelemetryUnavailable

POWERCAP_ROOT = "/sys/class/powercap"
_TOP_LEVEL = re.compile(r"intel-rapl:\d+")


@dataclass
class _Domain:
    name: str
    energy_path: Path
    max_range_uj: int | None
    last_uj: int


def _read_int(path: Path) -> int:
    return int(path.read_text().strip())


class RAPLSource(TelemetrySource):
    name = "rapl"
    scope = "CPU package(s) via RAPL: the whole socket, every process on it, not only this benchmark"

    def __init__(self, root: str | Path = POWERCAP_ROOT) -> None:
        super().__init__()
        root = Path(root)
        if not root.is_dir():
            raise TelemetryUnavailable(
                f"no RAPL powercap interface ({root} does not exist: not an Intel/AMD host with the "
                "intel_rapl driver, or a VM/container without it)"
            )
        self.domains: list[_Domain] = []
        for zone in sorted(p for p in root.iterdir() if _TOP_LEVEL.fullmatch(p.name)):
            try:
                label = (zone / "name").read_text().strip()
            except OSError:
                continue
            if not label.startswith("package"):
                continue
            energy = zone / "energy_uj"
            try:
                first = _read_int(energy)
            except PermissionError:
                raise TelemetryUnavailable(
                    f"{energy} is not readable by this user (RAPL counters are root-only since Linux "
                    "5.10); run as root or make energy_uj readable to measure CPU energy"
                ) from None
            except (OSError, ValueError) as exc:
                raise TelemetryUnavailable(f"cannot read {energy}: {exc}") from None
            try:
                max_range: int | None = _read_int(zone / "max_energy_range_uj")
            except (OSError, ValueError):
                max_range = None
                self.notes.append(f"{zone.name}: max_energy_range_uj unreadable, counter wrap not corrected")
            self.domains.append(_Domain(label, energy, max_range, first))
        if not self.domains:
            raise TelemetryUnavailable(f"no RAPL package domain under {root}")
        self.device = "+".join(d.name for d in self.domains)
        self._total_uj = 0
        self._last: tuple[float, float] | None = None  # (t, energy_j) of the previous poll
        self._field("utilisation", _cpu_pct)  # psutil's first answer covers nothing; later ones are real

    def _advance(self) -> None:
        for d in self.domains:
            raw = _read_int(d.energy_path)
            delta = raw - d.last_uj
            if delta < 0:  # the counter wrapped since the last poll
                delta = delta + d.max_range_uj if d.max_range_uj else 0
            self._total_uj += delta
            d.last_uj = raw

    def read(self) -> Reading:
        t = self.now()
        self._field("energy", self._advance)
        energy_j = self._total_uj / 1e6 if "energy" not in self.errors else None
        power = None
        if energy_j is not None:
            if self._last is not None and t > self._last[0]:
                power = (energy_j - self._last[1]) / (t - self._last[0])
            self._last = (t, energy_j)
        return Reading(
            t, power_w=power, energy_j=energy_j, utilisation_pct=self._field("utilisation", _cpu_pct)
        )


def _cpu_pct() -> float:
    return float(psutil.cpu_percent(interval=None))  # since the previous call: the poll interval
