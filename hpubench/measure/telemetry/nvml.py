"""NVIDIA GPU power, energy, utilisation and temperature through NVML (``pynvml`` from ``nvidia-ml-py``).

Optional: without the package, or without a driver, CUDA cells simply have no telemetry and say why.
NVML numbers GPUs its own way (PCI order, all GPUs), CUDA its way (fastest first unless
``CUDA_DEVICE_ORDER=PCI_BUS_ID``, filtered by ``CUDA_VISIBLE_DEVICES``), so the board is found by the UUID
torch reports for the CUDA device rather than by index. The total-energy counter (Volta and newer) is
preferred over integrating ``nvmlDeviceGetPowerUsage``, which on recent boards is a one-second average.
That counter advances in steps: every 100 ms (94.5-105.3 ms) on an H100, polled every 2 ms under load
(README, 2026-11-26); it is read alone every 20 ms between full readings so the steps are seen.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hpubench.measure.telemetry.base import Reading, TelemetrySource, TelemetryUnavailable

INSTALL_HINT = "pip install nvidia-ml-py"


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _cuda_uuid(index: int) -> str | None:
    try:
        import torch  # deferred: the accelerator registry imports this module and stays torch-free

        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    except Exception:
        return None
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


class NVMLSource(TelemetrySource):
    name = "nvml"
    scope = "one GPU board (NVML): the whole board, every process on it"
    energy_poll_s = 0.02

    def __init__(self, index: int) -> None:
        super().__init__()
        try:
            import pynvml  # deferred: optional (nvidia-ml-py); absent means no telemetry
        except ImportError:
            raise TelemetryUnavailable(f"nvidia-ml-py is not installed ({INSTALL_HINT})") from None
        self._nvml = pynvml
        try:
            pynvml.nvmlInit()
        except Exception as exc:
            raise TelemetryUnavailable(f"nvmlInit failed: {type(exc).__name__}: {exc}") from None
        try:
            self._handle = self._find(index)
            self.device = _text(pynvml.nvmlDeviceGetName(self._handle))
        except Exception as exc:
            self.close()
            raise TelemetryUnavailable(
                f"NVML has no handle for CUDA device {index}: {type(exc).__name__}: {exc}"
            ) from None

    def _find(self, index: int) -> Any:
        uuid = _cuda_uuid(index)
        if uuid is not None:
            try:
                return self._nvml.nvmlDeviceGetHandleByUUID(uuid)
            except Exception as exc:
                self.notes.append(f"UUID lookup failed ({exc}); fell back to NVML index {index}")
        else:
            self.notes.append(f"torch reports no device UUID; NVML index {index} assumed to be CUDA {index}")
        return self._nvml.nvmlDeviceGetHandleByIndex(index)

    def _energy_mj(self) -> int | None:
        nv, h = self._nvml, self._handle
        return self._field("energy", lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h))

    def read_energy(self) -> Reading:
        t = self.now()
        energy_mj = self._energy_mj()
        return Reading(t, energy_j=None if energy_mj is None else energy_mj / 1000.0)

    def read(self) -> Reading:
        nv, h = self._nvml, self._handle
        t = self.now()
        energy_mj = self._energy_mj()  # first: the counter is what the window's energy is taken from
        power_mw = self._field("power", lambda: nv.nvmlDeviceGetPowerUsage(h))
        util = self._field("utilisation", lambda: nv.nvmlDeviceGetUtilizationRates(h).gpu)
        temp = self._field("temperature", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        return Reading(
            t,
            power_w=None if power_mw is None else power_mw / 1000.0,
            energy_j=None if energy_mj is None else energy_mj / 1000.0,
            utilisation_pct=None if util is None else float(util),
            temperature_c=None if temp is None else float(temp),
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()
