"""Telemetry sources, the sampler and the energy arithmetic; absent is always None, never 0.

RAPL runs against a fake powercap tree in tmp_path (this machine may have none, and the real counters are
root-only), NVML against a tiny stand-in module injected as ``pynvml``.
"""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import pytest

from hpubench.measure.telemetry import (
    Monitor,
    Reading,
    TelemetrySource,
    TelemetryUnavailable,
    absent,
    summarise,
)
from hpubench.measure.telemetry import rapl as rapl_mod
from hpubench.measure.telemetry.hlml import utilisation_pct
from hpubench.measure.telemetry.rapl import RAPLSource
from hpubench.measure.telemetry.readcost import probe, time_reads
from hpubench.measure.telemetry.sampler import Sampler
from hpubench.measure.telemetry.summary import J_PER_KWH, MAX_SAMPLES_KEPT

FIGURES = (
    "energy_j",
    "mean_power_w",
    "max_power_w",
    "energy_per_step_j",
    "energy_per_sample_j",
    "samples_per_kwh",
    "mean_utilisation_pct",
    "max_temperature_c",
    "energy_cost_per_1m_samples",
    "energy_cost_per_hour",
)


# ---- RAPL on a fake sysfs tree ------------------------------------------------------------------------


def _zone(root: Path, name: str, label: str, energy_uj: int, max_uj: int | None = 1_000_000) -> Path:
    z = root / name
    z.mkdir(parents=True)
    (z / "name").write_text(label + "\n")
    (z / "energy_uj").write_text(f"{energy_uj}\n")
    if max_uj is not None:
        (z / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return z


@pytest.fixture
def powercap(tmp_path: Path) -> Path:
    root = tmp_path / "powercap"
    _zone(root, "intel-rapl:0", "package-0", 100)
    _zone(root, "intel-rapl:1", "package-1", 500)
    _zone(root, "intel-rapl:0:0", "core", 50)  # a sub-zone: inside package-0, must not be added again
    _zone(root, "intel-rapl:2", "psys", 9_000)  # the platform domain overlaps the packages
    return root


def test_rapl_sums_package_domains_only(powercap):
    src = RAPLSource(powercap)
    assert src.device == "package-0+package-1"
    first = src.read()
    assert first.energy_j == 0.0 and first.power_w is None  # no previous poll to difference against
    (powercap / "intel-rapl:0" / "energy_uj").write_text("300\n")  # +200 uJ
    (powercap / "intel-rapl:1" / "energy_uj").write_text("600\n")  # +100 uJ
    (powercap / "intel-rapl:0:0" / "energy_uj").write_text("99999\n")
    (powercap / "intel-rapl:2" / "energy_uj").write_text("99999\n")
    second = src.read()
    assert second.energy_j == pytest.approx(300e-6)
    assert second.power_w is not None and second.power_w > 0


def test_rapl_undoes_a_counter_wrap_with_max_energy_range(powercap):
    src = RAPLSource(powercap)
    src.read()
    (powercap / "intel-rapl:0" / "energy_uj").write_text("999900\n")  # +999800
    assert src.read().energy_j == pytest.approx(999_800e-6)
    (powercap / "intel-rapl:0" / "energy_uj").write_text("40\n")  # wrapped at 1_000_000: +100 +40
    assert src.read().energy_j == pytest.approx((999_800 + 140) * 1e-6)


def test_rapl_without_the_interface_is_absent_with_a_reason(tmp_path):
    with pytest.raises(TelemetryUnavailable, match="does not exist"):
        RAPLSource(tmp_path / "nothing-here")


def test_rapl_with_no_package_domain_is_absent(tmp_path):
    root = tmp_path / "powercap"
    _zone(root, "intel-rapl:0", "psys", 1)
    with pytest.raises(TelemetryUnavailable, match="no RAPL package domain"):
        RAPLSource(root)


def test_unreadable_rapl_counters_are_absent_not_zero(powercap, monkeypatch):
    def denied(path: Path) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(rapl_mod, "_read_int", denied)
    with pytest.raises(TelemetryUnavailable, match="root-only"):
        RAPLSource(powercap)
    # through the Monitor, the cell records the reason and no figure at all
    monitor = Monitor(lambda: RAPLSource(powercap), 0.01)
    monitor.start()
    monitor.stop()
    result = monitor.result(steps=10, samples_per_step=64)
    assert result.source is None and "root-only" in result.absent_reason
    assert all(getattr(result, f) is None for f in FIGURES)


def test_rapl_without_max_range_notes_that_wraps_are_not_corrected(tmp_path):
    root = tmp_path / "powercap"
    _zone(root, "intel-rapl:0", "package-0", 10, max_uj=None)
    src = RAPLSource(root)
    assert any("wrap not corrected" in n for n in src.notes)


def test_this_machine_rapl_is_either_readable_or_absent_with_a_reason():
    try:
        src = RAPLSource()
    except TelemetryUnavailable as exc:
        assert str(exc)
    else:
        assert src.read().energy_j is not None


# ---- summary arithmetic -------------------------------------------------------------------------------


def test_counter_energy_gives_power_energy_per_step_and_samples_per_kwh():
    readings = [
        Reading(10.0, power_w=90.0, energy_j=1000.0),
        Reading(11.0, 110.0, 1100.0),
        Reading(12.0, 100.0, 1200.0),
    ]
    r = summarise(readings, source="fake", steps=10, samples_per_step=64, price_per_kwh=0.30)
    assert r.energy_method == "counter"
    assert r.energy_j == pytest.approx(200.0)
    assert r.duration_s == pytest.approx(2.0)
    assert r.mean_power_w == pytest.approx(100.0)
    assert r.max_power_w == 110.0
    assert r.energy_per_step_j == pytest.approx(20.0)
    assert r.energy_per_sample_j == pytest.approx(200.0 / 640)
    assert r.samples_per_kwh == pytest.approx(640 / (200.0 / J_PER_KWH))
    assert r.energy_cost_per_1m_samples == pytest.approx(0.30 * (200.0 / 640) * 1e6 / J_PER_KWH)
    assert r.energy_cost_per_hour == pytest.approx(0.30 * 0.1)  # 100 W for an hour = 0.1 kWh
    assert [s.energy_j for s in r.samples] == [0.0, 100.0, 200.0]  # relative to the window start
    assert r.samples[0].t_s == 0.0


def test_without_a_counter_energy_is_the_integral_of_power():
    readings = [Reading(0.0, power_w=100.0), Reading(1.0, power_w=200.0), Reading(2.0, power_w=100.0)]
    r = summarise(readings, source="fake", steps=4, samples_per_step=1)
    assert r.energy_method == "power-integral"
    assert r.energy_j == pytest.approx(300.0)  # trapezoids: 150 + 150
    assert r.mean_power_w == pytest.approx(150.0)
    assert r.energy_per_step_j == pytest.approx(75.0)


def test_a_counter_that_did_not_advance_falls_back_to_power_and_says_so():
    readings = [Reading(0.0, 50.0, 7.0), Reading(0.01, 50.0, 7.0)]
    r = summarise(readings, source="fake", steps=1, samples_per_step=1)
    assert r.energy_method == "power-integral"
    assert any("did not advance" in n for n in r.notes)


def test_missing_fields_stay_none_never_zero():
    readings = [Reading(0.0), Reading(1.0)]  # a source that answered nothing
    r = summarise(readings, source="fake", steps=5, samples_per_step=8, price_per_kwh=0.2)
    assert r.source == "fake"
    assert all(getattr(r, f) is None for f in FIGURES)
    one = summarise([Reading(0.0, 10.0, 1.0)], source="fake", steps=5, samples_per_step=8)
    assert one.energy_j is None and one.mean_power_w is None and one.readings == 1


def test_no_price_means_no_cost():
    readings = [Reading(0.0, 100.0, 0.0), Reading(1.0, 100.0, 100.0)]
    r = summarise(readings, source="fake", steps=1, samples_per_step=1)
    assert r.energy_price_per_kwh is None and r.energy_cost_per_1m_samples is None
    assert r.energy_cost_per_hour is None


def test_long_series_are_thinned_in_the_record_but_summarised_in_full():
    readings = [Reading(float(i), power_w=100.0, energy_j=100.0 * i) for i in range(2000)]
    r = summarise(readings, source="fake", steps=1, samples_per_step=1)
    assert r.readings == 2000 and len(r.samples) <= MAX_SAMPLES_KEPT
    assert r.samples[0].t_s == 0.0 and r.samples[-1].t_s == 1999.0
    assert r.energy_j == pytest.approx(199_900.0)


def test_absent_result_has_a_reason_and_no_figures():
    r = absent("no driver")
    assert r.source is None and r.absent_reason == "no driver"
    assert all(getattr(r, f) is None for f in FIGURES)


# ---- sampler thread -----------------------------------------------------------------------------------


class CountingSource(TelemetrySource):
    name = "counting"
    scope = "test"

    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__()
        self.calls = 0
        self.fail_after = fail_after

    def read(self) -> Reading:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("sensor went away")
        t = time.perf_counter()
        return Reading(t, power_w=250.0, energy_j=250.0 * t, utilisation_pct=50.0, temperature_c=60.0)


@pytest.mark.serial
def test_sampler_polls_in_the_background_and_brackets_the_window():
    src = CountingSource()
    sampler = Sampler(src, interval_s=0.01)
    sampler.start()
    assert len(sampler.readings) == 1  # the start reading is taken on the caller's thread
    time.sleep(0.1)
    readings = sampler.stop()
    assert len(readings) >= 4
    assert sampler.stop() is readings and len(sampler.stop()) == len(readings)  # idempotent
    r = summarise(readings, source="counting", steps=10, samples_per_step=2)
    assert r.mean_power_w == pytest.approx(250.0)
    assert r.mean_utilisation_pct == 50.0 and r.max_temperature_c == 60.0


class BurningSource(CountingSource):
    """Each read burns ``burn_s`` of its thread's CPU time: a costly library call that holds the core."""

    def __init__(self, burn_s: float) -> None:
        super().__init__()
        self.burn_s = burn_s

    def read(self) -> Reading:
        end = time.thread_time() + self.burn_s
        while time.thread_time() < end:
            pass
        return super().read()


@pytest.mark.serial
def test_the_sampler_keeps_the_cpu_time_its_polls_took():
    src = BurningSource(0.003)
    sampler = Sampler(src, interval_s=0.01)
    assert sampler.cpu_share_pct() is None  # nothing measured before the window ends
    sampler.start()
    time.sleep(0.2)
    sampler.stop()
    in_thread = src.calls - 2  # the edge readings run on the caller's thread and are not counted
    assert in_thread >= 3
    assert sampler.thread_cpu_s >= 0.003 * in_thread
    assert sampler.cpu_share_pct() == pytest.approx(100 * sampler.thread_cpu_s / sampler.window_s)


@pytest.mark.serial
def test_a_busy_sampler_says_so_and_a_quiet_one_does_not():
    readings = [Reading(0.0, 100.0, 0.0), Reading(1.0, 100.0, 100.0)]
    busy = summarise(readings, source="x", steps=1, samples_per_step=1, sampler_cpu_pct=2.5)
    quiet = summarise(readings, source="x", steps=1, samples_per_step=1, sampler_cpu_pct=0.3)
    assert busy.sampler_cpu_pct == 2.5 and quiet.sampler_cpu_pct == 0.3
    assert any("telemetry sampler took 2.5% of a core" in n for n in busy.notes)
    assert not any("sampler" in n for n in quiet.notes)


@pytest.mark.serial
def test_the_monitor_records_what_its_sampler_cost():
    monitor = Monitor(lambda: BurningSource(0.004), 0.01)
    monitor.start()
    time.sleep(0.15)
    monitor.stop()
    r = monitor.result(steps=3, samples_per_step=1)
    assert r.sampler_cpu_pct is not None and r.sampler_cpu_pct > 1.0  # >= 4 ms every ~14 ms
    assert any("telemetry sampler took" in n for n in r.notes)
    monitor.close()


def test_a_reading_is_priced_in_cpu_and_wall_time():
    src = BurningSource(0.002)
    cost = time_reads(src, reads=5)
    # 5 full readings, then 5 energy-only ones, which a source without a cheaper one reads in full
    assert cost.source == "counting" and cost.reads == 5 and src.calls == 10
    assert cost.full_cpu_s >= 0.002 and cost.full_wall_s >= cost.full_cpu_s * 0.99
    assert cost.energy_cpu_s >= 0.002
    with pytest.raises(ValueError, match="reads must be >= 1"):
        time_reads(src, reads=0)


def test_the_probe_never_raises_and_always_closes():
    closed = []

    class Closing(BurningSource):
        def close(self) -> None:
            closed.append(True)
            raise RuntimeError("close failed too")

    assert probe(lambda: Closing(0.0), reads=2)["source"] == "counting" and closed == [True]

    def unavailable():
        raise TelemetryUnavailable("no NVML here")

    def broken():
        raise OSError("libnvidia-ml.so: cannot open")

    class FailingRead(CountingSource):
        def read(self) -> Reading:
            raise RuntimeError("sensor gone")

    assert probe(unavailable) == {"absent": "no NVML here"}
    assert probe(broken) == {"error": "OSError: libnvidia-ml.so: cannot open"}
    assert probe(FailingRead) == {"error": "reading counting failed: RuntimeError: sensor gone"}


def test_a_failing_source_never_breaks_the_run():
    src = CountingSource(fail_after=2)
    monitor = Monitor(lambda: src, 0.005)
    monitor.start()
    time.sleep(0.05)
    monitor.stop()
    r = monitor.result(steps=3, samples_per_step=1)
    assert r.source == "counting"
    assert any("sensor went away" in n for n in r.notes)
    monitor.close()


def test_a_field_that_fails_once_is_not_polled_again():
    class Flaky(TelemetrySource):
        name = "flaky"
        scope = "test"

        def __init__(self) -> None:
            super().__init__()
            self.power_calls = 0

        def power(self) -> float:
            self.power_calls += 1
            raise OSError("not supported")

        def read(self) -> Reading:
            return Reading(time.perf_counter(), power_w=self._field("power", self.power))

    src = Flaky()
    assert src.read().power_w is None and src.read().power_w is None
    assert src.power_calls == 1 and "not supported" in src.errors["power"]


def test_monitor_for_a_device_without_telemetry_is_absent():
    def no_source():
        raise TelemetryUnavailable("no telemetry source for tpu")  # Accelerator.telemetry_source's default

    r = Monitor(no_source, 0.1).result(steps=1, samples_per_step=1)
    assert r.source is None and "tpu" in r.absent_reason


# ---- HLML / NVML specifics ----------------------------------------------------------------------------


def test_hlml_utilisation_reads_both_release_shapes():
    assert utilisation_pct(types.SimpleNamespace(aip=87, memory=40)) == 87.0  # 1.24: a struct
    assert utilisation_pct(91) == 91.0  # older releases: an int


def fake_pynvml(uuid_ok: bool = True) -> types.ModuleType:
    m = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    state = {"t": 0}
    m.NVMLError = NVMLError
    m.NVML_TEMPERATURE_GPU = 0
    m.nvmlInit = lambda: None
    m.nvmlShutdown = lambda: None

    def by_uuid(uuid):
        if not uuid_ok:
            raise NVMLError("Not Found")
        return ("uuid", uuid)

    m.nvmlDeviceGetHandleByUUID = by_uuid
    m.nvmlDeviceGetHandleByIndex = lambda i: ("index", i)
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    m.nvmlDeviceGetPowerUsage = lambda h: 300_000

    def energy(h):
        state["t"] += 1
        return 5_000_000 + 300_000 * state["t"]

    m.nvmlDeviceGetTotalEnergyConsumption = energy
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=97, memory=60)
    m.nvmlDeviceGetTemperature = lambda h, sensor: 71
    return m


def test_nvml_source_reads_watts_joules_and_finds_the_board(monkeypatch):
    from hpubench.measure.telemetry import nvml

    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(uuid_ok=False))
    src = nvml.NVMLSource(0)
    assert src.device == "NVIDIA H100 80GB HBM3"
    assert any("index 0" in n for n in src.notes)  # no usable UUID here: the index fallback is noted
    r1, r2 = src.read(), src.read()
    assert r1.power_w == 300.0 and r1.utilisation_pct == 97.0 and r1.temperature_c == 71.0
    assert r2.energy_j - r1.energy_j == pytest.approx(300.0)
    src.close()


def test_nvml_missing_package_is_absent_with_the_install_hint(monkeypatch):
    from hpubench.measure.telemetry import nvml

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    with pytest.raises(TelemetryUnavailable, match="nvidia-ml-py"):
        nvml.NVMLSource(0)


def test_hlml_missing_package_is_absent_with_the_install_hint(monkeypatch):
    from hpubench.measure.telemetry import hlml

    monkeypatch.setitem(sys.modules, "pyhlml", None)
    with pytest.raises(TelemetryUnavailable, match="habana-pyhlml"):
        hlml.HLMLSource(0)
