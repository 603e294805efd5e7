"""C10: HLML handles are per device index, and the index is not the module id. Telemetry for a rank's
card maps with each handle's module id query (``hlmlDeviceGetModuleID``, an inferred name: tolerated
when absent) before reading power."""

from __future__ import annotations

import os
from types import ModuleType

import pytest
from contract_doubles import FOREIGN, double_env, run_worker

from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.plan.cell import Cell

BASE_W, STEP_W = 420.0, 50.0  # the double's module m draws BASE_W + m * STEP_W (5% ripple)


def _handle_of_module(pyhlml: ModuleType, module: int) -> object:
    for i in range(pyhlml.hlmlDeviceGetCount()):
        h = pyhlml.hlmlDeviceGetHandleByIndex(i)
        if pyhlml.hlmlDeviceGetModuleID(h) == module:
            return h
    raise AssertionError(f"no handle for module {module}")


def test_the_double_numbers_handles_apart_from_modules(pyhlml) -> None:
    pyhlml.hlmlInit()
    handles = [pyhlml.hlmlDeviceGetHandleByIndex(i) for i in range(pyhlml.hlmlDeviceGetCount())]
    modules = [pyhlml.hlmlDeviceGetModuleID(h) for h in handles]
    assert sorted(modules) == list(range(8)) and modules != list(range(8))
    powers = [pyhlml.hlmlDeviceGetPowerUsage(_handle_of_module(pyhlml, m)) / 1000 for m in range(8)]
    for m, watts in enumerate(powers):
        assert watts == pytest.approx(BASE_W + m * STEP_W, rel=0.051)
    pyhlml.hlmlShutdown()


@pytest.mark.parametrize("module", [0, 3, 7])
def test_hpu_telemetry_reads_the_power_of_its_own_module(pyhlml, monkeypatch, module: int) -> None:
    monkeypatch.setenv("HLS_MODULE_ID", str(module))  # what hpubench gives the process of that card (C4)
    source = HPUAccelerator(0).telemetry_source()
    try:
        got = source.read().power_w
        pyhlml.hlmlInit()  # the double shares its state: already initialised by the source
        want = pyhlml.hlmlDeviceGetPowerUsage(_handle_of_module(pyhlml, module)) / 1000
    finally:
        source.close()
    assert got == pytest.approx(want, rel=2e-3)
    assert source.notes == []


def test_without_the_module_id_query_the_index_is_assumed_and_noted(pyhlml, monkeypatch) -> None:
    monkeypatch.delattr(pyhlml, "hlmlDeviceGetModuleID")
    monkeypatch.setenv("HLS_MODULE_ID", "2")
    source = HPUAccelerator(0).telemetry_source()
    try:
        assert source.read().power_w is not None
    finally:
        source.close()
    assert any("hlmlDeviceGetModuleID" in note for note in source.notes), source.notes


def test_a_cell_records_the_power_of_the_module_it_runs_on(monkeypatch) -> None:
    cell = {"workload": "mlp", "accelerator": "hpu", "mode": "eager", "warmup_steps": 1, "steps": 4}
    cell["device_ids"] = [3]
    env = double_env()
    for key in [k for k in list(os.environ) if k.startswith(FOREIGN)]:
        monkeypatch.delenv(key)
    env.update(HPUAccelerator.env_before_import(Cell.from_dict(cell)))
    rec = run_worker(cell, env, {"telemetry_interval_s": 0.005})
    assert rec["status"] == "ok", (rec["reason"], rec.get("traceback_tail"))
    assert rec["telemetry"]["mean_power_w"] == pytest.approx(BASE_W + 3 * STEP_W, rel=0.06)
