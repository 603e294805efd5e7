"""Test double of ``pyhlml`` (package ``habana-pyhlml``), Habana's telemetry library, for machines
without Gaudi or its driver. It follows ``shared/hpu-api.md`` name for name; its figures describe a
modelled module, never a real one (``__hpubench_test_double__`` marks it).

The model: power ripples 5% around a base figure (``HPUBENCH_FAKE_HLML_POWER_W``, default 420 W) with a
one-second period, and the total-energy counter is that power's exact integral from an arbitrary
boot-time offset, so counter-based and power-based energy agree within the ripple. Each module draws
its own power: module ``m`` ripples around the base plus ``m`` x ``MODULE_STEP_W``.

Handles are per device index, and the index is not the module id (contract C10): index ``i`` is module
``(i + 1) % count``, which ``hlmlDeviceGetModuleID(handle)`` (the inferred name of the query) tells.

Library lifetime, as habana-pyhlml 1.24.2.481's ``pyhlml/main.py`` (issue 31, fact 13): the module holds
``_hlmlOBJ = None`` until ``hlmlInit`` loads libhlml.so, and every call starts with
``_hlmlOBJ.get_func_ptr(...)``, so any call before ``hlmlInit`` (``hlmlShutdown`` included), or after an
``hlmlInit`` that could not load the library, raises ``AttributeError: 'NoneType' object has no attribute
'get_func_ptr'``, not ``HLMLError``. ``hlmlInit`` first makes the ``HLMLError_<CapWords>`` subclasses
(``hlml_error.ErrorsAsClass``). ``hlmlShutdown`` keeps ``_hlmlOBJ``; what libhlml answers to a call after
it is not known from the wrapper's source, and the double keeps raising ``HLMLError`` there (unverified).

Knobs (environment, read at call time):
- ``HPUBENCH_FAKE_HLML_RELEASE`` (default ``1.24.2``): ``hlmlDeviceGetUtilizationRates`` returns a struct
  with ``.aip`` and ``.memory`` from 1.24 on, a plain int before.
- ``HPUBENCH_FAKE_HLML_POWER_W``: the base power in watts.
- ``HPUBENCH_FAKE_HLML_FAIL``: comma-separated calls that raise ``HLMLError``: ``init`` (as when
  libhlml.so is missing: ``HLMLError_Uninitialized``, and "Failed to load libhlml" on stdout),
  ``power``, ``energy``, ``utilization``, ``temperature`` (``HLMLError_NotSupported``).
- ``HPUBENCH_FAKE_HPU_COUNT`` / ``HPUBENCH_FAKE_HPU_NAME``: shared with the habana_frameworks double.
- ``HPUBENCH_FAKE_HPU_CALL_LOG``: every call appends ``hlml.<name><TAB><detail>`` to this file.
- ``HPUBENCH_FAKE_HLML_ENERGY_CPU_MS``: each read of the energy counter burns this much of its thread's CPU
  time, as a slow driver call does (one NVML reading took 2.4 ms of CPU on an H100 host; README).
"""

from __future__ import annotations

import ctypes
import math
import os
import time
from typing import Any

from pyhlml.hlml_error import (
    HLML_ERROR_INVALID_ARGUMENT,
    HLML_ERROR_NOT_SUPPORTED,
    HLML_ERROR_UNINITIALIZED,
    ErrorsAsClass,
    HLMLError,
)

__hpubench_test_double__ = True

RELEASE_ENV = "HPUBENCH_FAKE_HLML_RELEASE"
POWER_ENV = "HPUBENCH_FAKE_HLML_POWER_W"
FAIL_ENV = "HPUBENCH_FAKE_HLML_FAIL"
COUNT_ENV = "HPUBENCH_FAKE_HPU_COUNT"
NAME_ENV = "HPUBENCH_FAKE_HPU_NAME"
CALL_LOG_ENV = "HPUBENCH_FAKE_HPU_CALL_LOG"
ENERGY_CPU_ENV = "HPUBENCH_FAKE_HLML_ENERGY_CPU_MS"

RIPPLE = 0.05
MODULE_STEP_W = 50.0  # module m's base power is the base figure + m * this
RIPPLE_PERIOD_S = 1.0
BOOT_ENERGY_MJ = 987_654_321  # the counter runs since the driver loaded, not since hlmlInit
GIB = 1024**3
HBM_BYTES = {"GAUDI3": 128 * GIB, "GAUDI2": 96 * GIB, "GAUDI": 32 * GIB}
TEMPERATURE_SENSORS = range(6)

_state: dict[str, Any] = {"init": False, "t0": time.monotonic()}


class _LibHLML:
    """Stands for ``pyhlml.hlml_lib.LibHLML``: the loaded libhlml.so, which ``hlmlInit`` makes."""

    def __init__(self) -> None:
        if _fails("init"):  # hlml_lib.py: CDLL("/usr/lib/habanalabs/libhlml.so") failed
            print("Failed to load libhlml")
            raise HLMLError(HLML_ERROR_UNINITIALIZED)
        self.ref_count = 0

    def get_func_ptr(self, name: str) -> str:
        return name


_hlmlOBJ: _LibHLML | None = None  # pyhlml.main's: None until an hlmlInit loads the library


class c_hlml_utilization(ctypes.Structure):
    _fields_ = (("aip", ctypes.c_uint), ("memory", ctypes.c_uint))


class c_hlml_memory(ctypes.Structure):
    _fields_ = (("free", ctypes.c_ulonglong), ("total", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong))


class _Handle:
    def __init__(self, index: int, module: int) -> None:
        self.index = index
        self.module = module

    def __repr__(self) -> str:
        return f"<hlml device {self.index} module {self.module} (test double)>"


def module_of_index(index: int, count: int) -> int:
    """The module id behind HLML device index ``index`` (C10: not the index itself)."""
    return (index + 1) % count


def _log(name: str, detail: str = "") -> None:
    path = os.environ.get(CALL_LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"hlml.{name}\t{detail}\n")


def _release() -> tuple[int, ...]:
    raw = os.environ.get(RELEASE_ENV, "1.24.2")
    try:
        return tuple(int(p) for p in raw.split(".")[:2])
    except ValueError:
        raise ValueError(f"{RELEASE_ENV}={raw!r} is not a release like 1.24.2") from None


def _fails(call: str) -> bool:
    return call in {c.strip() for c in os.environ.get(FAIL_ENV, "").split(",")}


def _count() -> int:
    return int(os.environ.get(COUNT_ENV, "8"))


def _name() -> str:
    return os.environ.get(NAME_ENV, "GAUDI2")


def _base_w(module: int = 0) -> float:
    return float(os.environ.get(POWER_ENV, "420")) + MODULE_STEP_W * module


def _enter(call: str, detail: str = "") -> None:
    """What starts every call: before any hlmlInit loaded the library ``_hlmlOBJ`` is None and this raises
    the real wrapper's AttributeError; after hlmlShutdown, HLMLError (what libhlml answers: unverified)."""
    _log(call, detail)
    _hlmlOBJ.get_func_ptr(call)  # type: ignore[union-attr]  # None before hlmlInit: AttributeError
    if not _state["init"]:
        raise HLMLError(HLML_ERROR_UNINITIALIZED)


def _check(handle: Any, call: str) -> None:
    _enter(call, repr(handle))
    if not isinstance(handle, _Handle):
        raise HLMLError(HLML_ERROR_INVALID_ARGUMENT)
    if _fails(call):
        raise HLMLError(HLML_ERROR_NOT_SUPPORTED)


def _elapsed() -> float:
    return time.monotonic() - _state["t0"]


def _power_w(t: float, module: int) -> float:
    return _base_w(module) * (1 + RIPPLE * math.sin(2 * math.pi * t / RIPPLE_PERIOD_S))


def _energy_j(t: float, module: int) -> float:
    """The exact integral of ``_power_w`` from 0 to ``t``."""
    w = 2 * math.pi / RIPPLE_PERIOD_S
    return _base_w(module) * (t + RIPPLE * (1 - math.cos(w * t)) / w)


# ---- library lifetime ----------------------------------------------------------------------------------
def hlmlInit() -> None:
    """Makes the error subclasses, then loads the library: without libhlml.so ``HLMLError_Uninitialized``
    and ``_hlmlOBJ`` stays as it was (None on a first try)."""
    global _hlmlOBJ
    _log("hlmlInit")
    ErrorsAsClass()
    _hlmlOBJ = _LibHLML()
    _hlmlOBJ.ref_count += 1
    _state["init"] = True


def hlmlShutdown() -> None:
    """Shuts the library down but keeps ``_hlmlOBJ`` (as the real wrapper does)."""
    _enter("hlmlShutdown")
    _hlmlOBJ.ref_count = 0  # type: ignore[union-attr]  # _enter raised where it is None
    _state["init"] = False


# ---- devices -------------------------------------------------------------------------------------------
def hlmlDeviceGetCount() -> int:
    _enter("hlmlDeviceGetCount")
    return _count()


def hlmlDeviceGetHandleByIndex(index: int) -> _Handle:
    _enter("hlmlDeviceGetHandleByIndex", str(index))
    if not 0 <= int(index) < _count():
        raise HLMLError(HLML_ERROR_INVALID_ARGUMENT)
    return _Handle(int(index), module_of_index(int(index), _count()))


def hlmlDeviceGetModuleID(device: _Handle) -> int:
    """The module id of the device behind ``device`` (C10; the name is inferred, see hpu-api.md)."""
    _check(device, "module_id")
    return device.module


def hlmlDeviceGetName(device: _Handle) -> bytes:
    _check(device, "name")
    return _name().encode()


def hlmlDeviceGetPowerUsage(device: _Handle) -> int:
    """Milliwatts."""
    _check(device, "power")
    return round(_power_w(_elapsed(), device.module) * 1000)


def hlmlDeviceGetTotalEnergyConsumption(device: _Handle) -> int:
    """Millijoules since the driver loaded."""
    _check(device, "energy")
    end = time.thread_time() + float(os.environ.get(ENERGY_CPU_ENV, "0")) / 1000
    while time.thread_time() < end:
        pass
    return BOOT_ENERGY_MJ + int(_energy_j(_elapsed(), device.module) * 1000)


def hlmlDeviceGetTemperature(device: _Handle, sensor: int) -> int:
    _check(device, "temperature")
    if int(sensor) not in TEMPERATURE_SENSORS:
        raise HLMLError(HLML_ERROR_INVALID_ARGUMENT)
    return int(40 + 15 * (1 - math.exp(-_elapsed() / 60.0)))


def hlmlDeviceGetUtilizationRates(device: _Handle) -> c_hlml_utilization | int:
    """A struct (``.aip``, ``.memory``) from release 1.24, a plain int (AIP %) before it."""
    _check(device, "utilization")
    aip = 85 + int(10 * math.sin(_elapsed()))
    if _release() >= (1, 24):
        return c_hlml_utilization(aip=aip, memory=40)
    return aip


def hlmlDeviceGetMemoryInfo(device: _Handle) -> c_hlml_memory:
    _check(device, "memory")
    name = _name().upper()
    total = next((v for k, v in HBM_BYTES.items() if name.startswith(k)), HBM_BYTES["GAUDI2"])
    used = 2 * GIB
    return c_hlml_memory(free=total - used, total=total, used=used)
