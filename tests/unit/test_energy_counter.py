"""Energy from a counter that advances in steps (NVML's on an H100: every 100 ms), and the sampler's
energy-only polls that let the summary see those steps."""

from __future__ import annotations

import math
import sys
import time

import pytest

from hpubench.measure.telemetry import Monitor, Reading, TelemetrySource, summarise
from hpubench.measure.telemetry.counter import counter_window
from hpubench.measure.telemetry.sampler import Sampler, within_budget
from tests.unit.test_telemetry import fake_pynvml

pytestmark = pytest.mark.serial

STEP_S, STEP_J = 0.1, 50.0  # 500 W, counted in 50 J steps every 100 ms


def stepped(t: float) -> float:
    """The counter a board like the H100 reports: whole steps only."""
    return math.floor(t / STEP_S + 1e-9) * STEP_J


def polls(start: float, end: float, every: float) -> list[tuple[float, float]]:
    times = [start + k * every for k in range(int((end - start) / every) + 1) if start + k * every < end]
    return [(t, stepped(t)) for t in [*times, end]]


def test_polls_that_see_the_steps_take_the_energy_between_two_of_them():
    # A window from just before one step to just after another: the edge difference counts 12 steps in
    # 1.12 s (536 W, +7%); between the first and last step seen it is 500 W.
    points = polls(0.09, 1.21, 0.02)
    edge = (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])
    assert edge == pytest.approx(535.7, abs=0.1)
    w = counter_window(points)
    assert w is not None and w.steps_resolved
    assert w.energy_j / 1.12 == pytest.approx(500.0, rel=0.02)
    assert w.step_period_s == pytest.approx(STEP_S, abs=0.021)
    assert w.resolution_pct < 2.0  # one 20 ms poll over the 1.1 s between the steps seen


def test_polls_as_coarse_as_the_steps_keep_the_edge_difference_and_say_how_coarse():
    points = polls(0.09, 1.21, 0.1)
    w = counter_window(points)
    assert w is not None and not w.steps_resolved and w.step_period_s is None
    assert w.energy_j == points[-1][1] - points[0][1]
    assert w.resolution_pct == pytest.approx(100 * 0.1 / 1.12, rel=0.01)


def test_a_counter_that_does_not_advance_has_no_window():
    assert counter_window([(0.0, 7.0), (0.5, 7.0), (1.0, 7.0)]) is None
    assert counter_window([(0.0, 7.0)]) is None


def test_the_summary_records_the_resolution_and_notes_a_coarse_one():
    fine = [Reading(t, power_w=500.0, energy_j=e) for t, e in polls(0.09, 1.21, 0.02)]
    r = summarise(fine, source="fake", steps=10, samples_per_step=1)
    assert r.energy_method == "counter" and r.counter_step_s == pytest.approx(0.1, abs=0.021)
    assert r.mean_power_w == pytest.approx(500.0, rel=0.02)
    assert r.energy_resolution_pct is not None and r.energy_resolution_pct < 2.0
    assert not any("energy within" in n for n in r.notes)
    coarse = [Reading(t, power_w=500.0, energy_j=e) for t, e in polls(0.09, 1.21, 0.1)]
    c = summarise(coarse, source="fake", steps=10, samples_per_step=1)
    assert c.energy_resolution_pct == pytest.approx(8.9, abs=0.1)
    assert any("energy within +/-9%" in n and "--telemetry-interval" in n for n in c.notes)


class SteppedSource(TelemetrySource):
    """Full readings and cheap counter-only readings, counted apart."""

    name = "stepped"
    scope = "test"
    energy_poll_s = 0.005

    def __init__(self) -> None:
        super().__init__()
        self.full = self.energy_only = 0

    def read(self) -> Reading:
        self.full += 1
        t = time.perf_counter()
        return Reading(t, power_w=500.0, energy_j=stepped(t), utilisation_pct=90.0)

    def read_energy(self) -> Reading:
        self.energy_only += 1
        t = time.perf_counter()
        return Reading(t, energy_j=stepped(t))


def test_the_sampler_reads_the_counter_alone_between_full_readings():
    src = SteppedSource()
    sampler = Sampler(src, interval_s=0.05, cpu_budget=1.0)  # the pattern alone: no CPU budget
    sampler.start()
    time.sleep(0.3)
    readings = sampler.stop()
    assert 4 <= src.full <= 10  # the edges plus one every 50 ms
    assert src.energy_only >= 3 * src.full  # every 5 ms between them
    r = summarise(readings, source="stepped", steps=1, samples_per_step=1)
    assert r.max_power_w == 500.0 and r.mean_utilisation_pct == 90.0  # from the full readings only


def test_a_source_without_energy_polls_is_read_in_full_every_interval():
    src = SteppedSource()
    src.energy_poll_s = None
    sampler = Sampler(src, interval_s=0.02)
    sampler.start()
    time.sleep(0.1)
    sampler.stop()
    assert src.energy_only == 0 and src.full >= 3


class CostlySteppedSource(SteppedSource):
    """Each reading burns 4 ms of its thread's CPU: an NVML call as slow as on the H100 host measured."""

    def _burn(self) -> None:
        end = time.thread_time() + 0.004
        while time.thread_time() < end:
            pass

    def read(self) -> Reading:
        self._burn()
        return super().read()

    def read_energy(self) -> Reading:
        self._burn()
        return super().read_energy()


def test_costly_readings_hold_the_energy_polls_back_to_the_cpu_budget():
    src = CostlySteppedSource()
    sampler = Sampler(src, interval_s=0.05)
    sampler.start()
    time.sleep(0.4)
    sampler.stop()
    # Unbudgeted, a 5 ms energy poll between 50 ms full readings would make energy_only >= 3 x full (the
    # cheap source's test above); a 4 ms reading blows a 1% budget at once, so hardly any are taken.
    assert sampler.energy_polls_limited
    assert src.energy_only <= 2 and src.full >= 4
    assert sampler.cpu_per_poll_s() >= 0.004


def test_the_budget_is_a_share_of_one_core():
    assert within_budget(0.001, 0.2) and within_budget(0.002, 0.2)
    assert not within_budget(0.0021, 0.2)
    assert within_budget(0.02, 0.2, budget=0.1) and not within_budget(0.03, 0.2, budget=0.1)


def test_a_held_back_sampler_says_why_the_energy_is_coarse():
    monitor = Monitor(CostlySteppedSource, 0.05)
    monitor.start()
    time.sleep(0.3)
    monitor.stop()
    r = monitor.result(steps=1, samples_per_step=1)
    held = [n for n in r.notes if n.startswith("energy-only polls held back")]
    assert len(held) == 1 and "of CPU here" in held[0]
    monitor.close()


def test_nvml_reads_its_counter_alone_and_asks_for_it_every_20_ms(monkeypatch):
    from hpubench.measure.telemetry import nvml

    fake = fake_pynvml()
    calls: list[str] = []
    power = fake.nvmlDeviceGetPowerUsage
    fake.nvmlDeviceGetPowerUsage = lambda h: calls.append("power") or power(h)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    src = nvml.NVMLSource(0)
    assert src.energy_poll_s == 0.02
    r = src.read_energy()
    assert r.energy_j is not None and r.power_w is None and calls == []
    src.close()
