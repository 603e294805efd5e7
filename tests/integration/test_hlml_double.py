"""HPU telemetry through the pyhlml test double, and the HPU memory timeline through the habana double.

The doubles read their knobs at call time, so one worker process (lazy mode is fixed at import) runs
every case in turn: both utilisation return shapes (struct in 1.24, int before), a missing driver, and
fields the device does not support. Figures from the doubles describe a model, never a Gaudi.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hpudata import HPU_MEMORY_KEYS

from hpubench.plan.autosteps import LEAD_IN_STEPS

FAKES = Path(__file__).resolve().parents[1] / "fakes"
BASE_W = 420.0  # the double's default base power

DRIVER = textwrap.dedent(
    """
    import json, os, sys
    from hpubench.plan.cell import Cell
    from hpubench.plan.runoptions import RunOptions
    from hpubench.run.worker import run_cell

    out = []
    for case in json.loads(sys.argv[1]):
        for k, v in case["env"].items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        cell = Cell.from_dict(case["cell"])
        out.append(run_cell(cell, options=RunOptions.from_dict(case["options"])).to_dict())
    print(json.dumps(out))
    """
)

CELL = {"workload": "mlp", "accelerator": "hpu", "mode": "lazy", "warmup_steps": 2, "steps": 6}
TELEMETRY = {"telemetry_interval_s": 0.005, "memory_every": 1, "energy_price_per_kwh": 0.25}
CASES = {
    "release-1.24": {"HPUBENCH_FAKE_HLML_RELEASE": "1.24.2", "HPUBENCH_FAKE_HLML_FAIL": None},
    "release-1.19": {"HPUBENCH_FAKE_HLML_RELEASE": "1.19.0"},
    "no-driver": {"HPUBENCH_FAKE_HLML_FAIL": "init"},
    "unsupported-fields": {"HPUBENCH_FAKE_HLML_FAIL": "energy,utilization"},
    "profile": {"HPUBENCH_FAKE_HLML_FAIL": None, "HABANA_PROFILE": "profile_api_light"},
}


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[str, dict]:
    out_dir = tmp_path_factory.mktemp("hlml")
    cases = []
    for name, env in CASES.items():
        options = dict(TELEMETRY)
        if name == "profile":
            options.update(profile={"wait": 0, "warmup": 1, "active": 2, "top": 10}, output_dir=str(out_dir))
        cases.append({"env": env, "cell": CELL, "options": options})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT_HPU", "HPUBENCH_FAKE", "HABANA_"))}
    env.update(PYTHONPATH=str(FAKES), PT_HPU_LAZY_MODE="1", HPUBENCH_FAKE_HPU_NAME="GAUDI2")
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(cases)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = json.loads(proc.stdout.strip().splitlines()[-1])
    for rec in recs:
        assert rec["status"] == "ok", (rec["reason"], rec.get("traceback_tail"))
    return {name: rec | {"_out": str(out_dir)} for name, rec in zip(CASES, recs, strict=True)}


@pytest.mark.parametrize("case", ["release-1.24", "release-1.19"])
@pytest.mark.slow  # shares one worker process on the doubles (~10 s)
def test_hlml_power_energy_utilisation_and_temperature_in_both_releases(records, case):
    t = records[case]["telemetry"]
    assert t["source"] == "hlml"
    assert t["device"] == "GAUDI2 (test double)"  # never passes as a real module
    assert t["energy_method"] == "counter"
    assert t["mean_power_w"] == pytest.approx(BASE_W, rel=0.06)  # the double ripples 5% around 420 W
    assert t["max_power_w"] == pytest.approx(BASE_W, rel=0.06)
    samples = 6 * 64
    assert t["energy_per_step_j"] == pytest.approx(t["energy_j"] / 6)
    assert t["samples_per_kwh"] == pytest.approx(samples / (t["energy_j"] / 3.6e6))
    assert t["energy_cost_per_1m_samples"] == pytest.approx(0.25 * t["energy_j"] / samples * 1e6 / 3.6e6)
    assert 70 <= t["mean_utilisation_pct"] <= 100  # read from .aip (1.24) or the int (older)
    assert 35 <= t["max_temperature_c"] <= 60
    assert t["readings"] >= 2
    # A window of a few tens of ms, polled every few ms: the counter's steps could be as coarse as the
    # polls (the double's is smooth; a real one may not be), and polls that often keep the sampler's
    # thread busy for a share of a core; those are the only caveats recorded, each only when it applies.
    assert t["energy_resolution_pct"] > 0 and t["counter_step_s"] is None
    assert t["sampler_cpu_pct"] > 0
    sampler_notes = [n for n in t["notes"] if n.startswith("the telemetry sampler took")]
    assert len(sampler_notes) == (t["sampler_cpu_pct"] > 1.0)
    assert all(n.startswith("energy within") for n in t["notes"] if n not in sampler_notes)
    energies = [s["energy_j"] for s in t["samples"]]
    assert energies == sorted(energies) and energies[0] == 0.0 and energies[-1] > 0


@pytest.mark.slow  # shares one worker process on the doubles (~10 s)
def test_without_the_driver_hpu_telemetry_is_absent_with_the_reason(records):
    t = records["no-driver"]["telemetry"]
    assert t["source"] is None and "hlmlInit failed" in t["absent_reason"]
    assert t["mean_power_w"] is None and t["energy_per_step_j"] is None and t["samples_per_kwh"] is None
    # the cell itself is unaffected
    assert records["no-driver"]["metrics"]["samples_per_s"] > 0


@pytest.mark.slow  # shares one worker process on the doubles (~10 s)
def test_unsupported_fields_are_none_and_energy_falls_back_to_the_power_integral(records):
    t = records["unsupported-fields"]["telemetry"]
    assert t["source"] == "hlml" and t["energy_method"] == "power-integral"
    assert t["mean_utilisation_pct"] is None
    assert t["mean_power_w"] == pytest.approx(BASE_W, rel=0.06)
    assert any(n.startswith("energy not read") for n in t["notes"])
    assert any(n.startswith("utilisation not read") for n in t["notes"])


@pytest.mark.slow  # shares one worker process on the doubles (~10 s)
def test_hpu_memory_timeline_has_the_full_memory_stats_key_set(records):
    tl = records["release-1.24"]["memory_timeline"]
    assert [s["phase"] for s in tl] == ["start"] + ["warmup"] * (2 + LEAD_IN_STEPS) + ["measured"] * 6
    for s in tl:
        assert set(s["raw"]) == HPU_MEMORY_KEYS
        assert s["in_use_bytes"] == s["raw"]["InUse"]
        assert s["limit_bytes"] == s["raw"]["Limit"] == int(94.62 * 2**30)
        assert s["peak_allocated_bytes"] == s["raw"]["MaxInUse"]


@pytest.mark.slow  # shares one worker process on the doubles (~10 s)
def test_hpu_profile_records_habana_profile_and_a_trace(records):
    rec = records["profile"]
    p = rec["profile"]
    assert p["error"] is None and p["habana_profile"] == "profile_api_light"
    # stock torch's HPU activity has no Gaudi profiler behind it: the pass falls back to host activity
    assert p["activities"][0] == "CPU"
    if p["activities"] == ["CPU"]:
        assert any("HPU activity failed to start" in n for n in p["notes"])
    assert any(row["name"].startswith("aten::") for row in p["top_ops"][:5])
    trace = json.loads((Path(rec["_out"]) / p["trace_path"]).read_text())
    assert trace["traceEvents"]
    assert len(p["step_times_s"]) == 2 and len(rec["step_times_s"]) == 6


# ---- the double itself, in process: the contract of shared/hpu-api.md --------------------------------------


def test_the_double_follows_the_contract(pyhlml, monkeypatch):
    from pyhlml.hlml_error import HLMLError

    with pytest.raises(AttributeError, match="get_func_ptr"):  # before hlmlInit, as pyhlml (C13)
        pyhlml.hlmlDeviceGetCount()
    pyhlml.hlmlInit()
    assert pyhlml.hlmlDeviceGetCount() == 8
    h = pyhlml.hlmlDeviceGetHandleByIndex(0)
    assert pyhlml.hlmlDeviceGetName(h) == b"GAUDI2"
    assert isinstance(pyhlml.hlmlDeviceGetPowerUsage(h), int)  # mW
    e1 = pyhlml.hlmlDeviceGetTotalEnergyConsumption(h)
    assert pyhlml.hlmlDeviceGetTotalEnergyConsumption(h) >= e1  # mJ, only ever grows
    mem = pyhlml.hlmlDeviceGetMemoryInfo(h)
    assert mem.total == mem.free + mem.used
    monkeypatch.setenv("HPUBENCH_FAKE_HLML_RELEASE", "1.24.2")
    util = pyhlml.hlmlDeviceGetUtilizationRates(h)
    assert hasattr(util, "aip") and hasattr(util, "memory")
    monkeypatch.setenv("HPUBENCH_FAKE_HLML_RELEASE", "1.22.0")
    assert isinstance(pyhlml.hlmlDeviceGetUtilizationRates(h), int)
    with pytest.raises(HLMLError):
        pyhlml.hlmlDeviceGetHandleByIndex(8)
    pyhlml.hlmlShutdown()
    with pytest.raises(HLMLError):
        pyhlml.hlmlDeviceGetPowerUsage(h)
