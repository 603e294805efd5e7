"""Gaudi module power, energy, utilisation and temperature through HLML (``pyhlml``, ``habana-pyhlml``).

Written against ``shared/hpu-api.md``: ``hlmlDeviceGetPowerUsage`` in mW,
``hlmlDeviceGetTotalEnergyConsumption`` in mJ, errors as ``pyhlml.hlml_error.HLMLError``.
``hlmlDeviceGetUtilizationRates`` returns a struct with ``.aip`` (and ``.memory``) in 1.24 but a plain int
in older releases; both are read. The package loads ``/usr/lib/habanalabs/libhlml.so`` at ``hlmlInit``,
so a machine without the driver gets a reason, not a crash. The temperature sensor is the one on the AIP
(``HLML_TEMPERATURE_ON_AIP``, 0 in pyhlml's types; the contract does not name the constant, so the value
is passed directly when the package lacks it).
"""

from __future__ import annotations

import contextlib
from typing import Any

from hpubench.measure.telemetry.base import Reading, TelemetrySource, TelemetryUnavailable

INSTALL_HINT = "pip install habana-pyhlml (needs the Habana driver's /usr/lib/habanalabs/libhlml.so)"
TEMPERATURE_ON_AIP = 0


def utilisation_pct(value: Any) -> float:
    """The AIP utilisation from either release's return type (struct ``.aip`` in 1.24, int before)."""
    aip = getattr(value, "aip", value)
    return float(aip)


def _sensor(pyhlml: Any) -> int:
    types = getattr(pyhlml, "hlml_types", None)
    sens = getattr(types, "HLML_TEMP_SENS", None)
    return int(getattr(sens, "HLML_TEMPERATURE_ON_AIP", TEMPERATURE_ON_AIP))


def find_module(pyhlml: Any, module: int) -> tuple[Any, str | None]:
    """The HLML handle of module ``module`` and a note when the mapping is assumed, not read.

    Handles are per device index and the index is not the module id (contract C10): each handle's
    module id (``hlmlDeviceGetModuleID``, an inferred name) says which it is. A pyhlml without that
    query leaves the index = module id assumption, and the note says so.
    """
    count = int(pyhlml.hlmlDeviceGetCount())
    query = getattr(pyhlml, "hlmlDeviceGetModuleID", None)
    if query is None:
        if not 0 <= module < count:
            raise TelemetryUnavailable(f"HLML sees {count} module(s); module {module} is not one")
        note = (
            f"pyhlml has no hlmlDeviceGetModuleID: HLML index {module} is assumed to be module {module} "
            "(unconfirmed mapping)"
        )
        return pyhlml.hlmlDeviceGetHandleByIndex(module), note
    seen = []
    for index in range(count):
        handle = pyhlml.hlmlDeviceGetHandleByIndex(index)
        seen.append(int(query(handle)))
        if seen[-1] == module:
            return handle, None
    raise TelemetryUnavailable(f"HLML has no module {module} (modules {sorted(seen)})")


class HLMLSource(TelemetrySource):
    name = "hlml"
    scope = "one Gaudi module (HLML): the whole module, every process on it"

    def __init__(self, module: int) -> None:
        """``module``: the module id of this process's card (``HPUAccelerator.telemetry_id``)."""
        super().__init__()
        try:
            import pyhlml  # deferred: optional (habana-pyhlml); absent means no telemetry
        except ImportError:
            raise TelemetryUnavailable(f"habana-pyhlml is not installed ({INSTALL_HINT})") from None
        self._hlml = pyhlml
        try:
            pyhlml.hlmlInit()
        except Exception as exc:  # HLMLError, or OSError from a broken driver install
            raise TelemetryUnavailable(f"hlmlInit failed: {type(exc).__name__}: {exc}") from None
        try:
            self._handle, note = find_module(pyhlml, module)
            if note:
                self.notes.append(note)
            name = pyhlml.hlmlDeviceGetName(self._handle)
            self.device = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
            if getattr(pyhlml, "__hpubench_test_double__", False):
                self.device += " (test double)"  # its figures must never pass as a real module's
        except TelemetryUnavailable:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise TelemetryUnavailable(f"HLML module {module}: {type(exc).__name__}: {exc}") from None
        self._sensor = _sensor(pyhlml)

    def read(self) -> Reading:
        hl, h = self._hlml, self._handle
        t = self.now()
        power_mw = self._field("power", lambda: hl.hlmlDeviceGetPowerUsage(h))
        energy_mj = self._field("energy", lambda: hl.hlmlDeviceGetTotalEnergyConsumption(h))
        util = self._field("utilisation", lambda: utilisation_pct(hl.hlmlDeviceGetUtilizationRates(h)))
        temp = self._field("temperature", lambda: hl.hlmlDeviceGetTemperature(h, self._sensor))
        return Reading(
            t,
            power_w=None if power_mw is None else power_mw / 1000.0,
            energy_j=None if energy_mj is None else energy_mj / 1000.0,
            utilisation_pct=util,
            temperature_c=None if temp is None else float(temp),
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._hlml.hlmlShutdown()
