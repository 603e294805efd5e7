"""The pure parts of profiling and observation: run options, operator table, memory sampling choice,
loader arithmetic, record round trips and the terminal views."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from types import SimpleNamespace

import pytest
from rich.console import Console

from hpubench.errors import UsageError
from hpubench.measure.devicestats import MemorySample, MemoryTimeline, should_sample
from hpubench.measure.loader import split_from_times
from hpubench.measure.memory import MemoryStats
from hpubench.measure.profile import OpRow, ProfileResult, op_table, trace_file_name, trace_relpath
from hpubench.measure.telemetry import Reading, summarise
from hpubench.plan.cell import Cell
from hpubench.plan.runoptions import ProfileOptions, RunOptions
from hpubench.present.tables import observation_tables, sparkline
from hpubench.run.scheduler import cell_options
from hpubench.store.record import STATUS_OK, CellResult

# ---- run options --------------------------------------------------------------------------------------


def test_default_run_options_change_nothing_and_round_trip():
    assert RunOptions() == RunOptions.from_dict(None) == RunOptions.from_dict({})
    opts = RunOptions(
        profile=ProfileOptions(2, 1, 4, 10), memory_every=3, loader="host", energy_price_per_kwh=0.2
    )
    assert RunOptions.from_dict(json.loads(json.dumps(opts.to_dict()))) == opts
    # a newer launcher's unknown setting does not break an older worker
    assert RunOptions.from_dict({**RunOptions().to_dict(), "from_the_future": 1}) == RunOptions()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"loader": "disk"},
        {"memory_every": -1},
        {"telemetry_interval_s": 0},
        {"energy_price_per_kwh": -0.1},
        {"energy_price_per_kwh": float("nan")},
    ],
)
def test_bad_run_options_are_usage_errors(kwargs):
    with pytest.raises(UsageError):
        RunOptions(**kwargs)


@pytest.mark.parametrize("kwargs", [{"active": 0}, {"wait": -1}, {"top": 0}])
def test_bad_profile_schedules_are_usage_errors(kwargs):
    with pytest.raises(UsageError):
        ProfileOptions(**kwargs)


def test_profiling_options_never_change_the_cell_key():
    cell = Cell("mlp")
    opts = RunOptions(profile=ProfileOptions(), memory_every=1, loader="host")
    assert "profile" not in cell.key and cell.key == Cell.from_dict(cell.to_dict()).key
    assert cell_options(opts, cell.key, 0).trace_relpath == trace_relpath(cell.key)
    # repetitions keep their own trace files
    assert cell_options(opts, cell.key, 2).trace_relpath.endswith(".r2.json")
    assert cell_options(None, cell.key, 0) is None
    assert cell_options(RunOptions(), cell.key, 1) == RunOptions()


def test_trace_file_names_are_safe():
    name = trace_file_name("gpt/tiny/cpu/1x1/32-true/eager/nographs/bsdefault/x=a b")
    assert "/" not in name and " " not in name and name.endswith(".json")


# ---- operator table -----------------------------------------------------------------------------------


def _ev(key, self_cpu_us, count=1, device="CPU", self_dev_us=0.0, annotation=False):
    return SimpleNamespace(
        key=key,
        count=count,
        self_cpu_time_total=self_cpu_us,
        cpu_time_total=self_cpu_us * 2,
        self_device_time_total=self_dev_us,
        device_time_total=self_dev_us,
        device_type=SimpleNamespace(name=device),
        is_user_annotation=annotation,
    )


def test_op_table_sorts_by_self_cpu_and_hides_step_ranges():
    events = [
        _ev("ProfilerStep*", 9_000, annotation=True),
        _ev("hpubench::step", 8_000, annotation=True),
        _ev("aten::addmm", 3_000, count=6),
        _ev("aten::mm", 1_000, count=9),
        _ev("Optimizer.step#AdamW.step", 500, annotation=True),
    ]
    rows, sort_by, cpu_total, device_busy = op_table(events, active_wall_s=0.01, top=2, device_traced=False)
    assert sort_by == "self_cpu" and device_busy is None
    assert [r.name for r in rows] == ["aten::addmm", "aten::mm"]
    assert rows[0].calls == 6 and rows[0].self_cpu_s == pytest.approx(0.003)
    assert rows[0].pct_of_step == pytest.approx(30.0)  # 3 ms of 10 ms of profiled wall time
    assert rows[0].self_device_s is None and rows[0].kind == "op"
    assert cpu_total == pytest.approx(0.0045)  # hidden ranges do not count
    all_rows, *_ = op_table(events, 0.01, top=10, device_traced=False)
    assert {r.kind for r in all_rows} == {"op", "annotation"}


def test_op_table_sorts_by_device_time_when_the_device_recorded_some():
    events = [
        _ev("aten::mm", 2_000, self_dev_us=100.0),
        _ev("aten::add_", 50, self_dev_us=900.0),
        _ev("sm90_gemm_kernel", 0, device="CUDA", self_dev_us=100.0),
        _ev("elementwise_kernel", 0, device="CUDA", self_dev_us=900.0),
    ]
    rows, sort_by, _, device_busy = op_table(events, 0.002, top=4, device_traced=True)
    assert sort_by == "self_device"
    assert rows[0].self_device_s == pytest.approx(0.0009)
    assert device_busy == pytest.approx(0.001)  # only device rows (kernels) count as busy time
    assert {r.kind for r in rows if r.device_type == "CUDA"} == {"kernel"}


def test_op_table_falls_back_to_cpu_when_the_device_recorded_nothing():
    rows, sort_by, _, busy = op_table([_ev("aten::mm", 10)], 0.001, top=5, device_traced=True)
    assert sort_by == "self_cpu" and busy == 0.0 and rows[0].self_device_s == 0.0


# ---- memory timeline ----------------------------------------------------------------------------------


def test_memory_is_sampled_every_warmup_step_every_kth_measured_step_and_the_last():
    picked = [i for i in range(10) if should_sample("measured", i, 4, 10)]
    assert picked == [0, 4, 8, 9]
    assert should_sample("warmup", 5, 4, 10)
    assert not should_sample("warmup", 0, 0, 10)  # 0 = off


def test_memory_timeline_keeps_small_raw_dicts_and_drops_large_ones():
    raw = {"Limit": 1, "InUse": 2}
    stats = iter(
        [MemoryStats("x", 5, 2, 10, raw=raw), MemoryStats("x", 6, 3, 10, raw={str(i): i for i in range(100)})]
    )
    tl = MemoryTimeline(lambda: next(stats), every=1, measured_steps=1)
    tl.start()
    tl.on_step("measured", 0)
    first, second = tl.samples
    assert (first.phase, first.step, first.raw) == ("start", 0, raw)
    assert (second.phase, second.step, second.raw, second.in_use_bytes) == ("measured", 1, {}, 3)


def test_a_failing_memory_query_stops_the_timeline_without_failing_the_cell():
    def boom() -> MemoryStats:
        raise RuntimeError("device lost")

    tl = MemoryTimeline(boom, every=1, measured_steps=3)
    tl.start()
    tl.on_step("measured", 0)
    assert tl.samples == [] and "device lost" in tl.error


# ---- loader arithmetic --------------------------------------------------------------------------------


def test_loader_split_is_the_share_of_step_time_spent_waiting_for_data():
    s = split_from_times([0.01, 0.03], [0.09, 0.07], samples_per_step=32)
    assert s.data_wait_mean_s == pytest.approx(0.02) and s.compute_mean_s == pytest.approx(0.08)
    assert s.data_fraction == pytest.approx(0.2)
    assert s.samples_per_s == pytest.approx(64 / 0.2)


# ---- records and views --------------------------------------------------------------------------------


def _observed_result() -> CellResult:
    profile = ProfileResult(
        wait=1,
        warmup=1,
        active=2,
        activities=("CPU",),
        sort_by="self_cpu",
        step_times_s=(0.01, 0.012),
        step_time_mean_s=0.011,
        overhead_vs_plain=0.1,
        trace_path="traces/x.json",
        trace_bytes=1234,
        top_ops=(OpRow("aten::addmm", "op", "CPU", 4, 0.004, 0.005, None, None, 36.4),),
        cpu_self_total_s=0.02,
        device_busy_s=None,
        habana_profile=None,
        notes=("a note",),
    )
    timeline = tuple(
        MemorySample(
            i, "warmup" if i < 2 else "measured", i * 0.1, 100 + i, 110 + i, 1000, raw={"InUse": 100 + i}
        )
        for i in range(5)
    )
    telemetry = summarise(
        [Reading(0.0, 100.0, 0.0, 50.0, 40.0), Reading(1.0, 100.0, 100.0, 60.0, 45.0)],
        source="hlml",
        steps=2,
        samples_per_step=8,
        device="GAUDI2",
        price_per_kwh=0.25,
        sampler_cpu_pct=0.4,
    )
    return CellResult(
        Cell("mlp", steps=2, warmup_steps=1),
        STATUS_OK,
        memory_timeline=timeline,
        telemetry=telemetry,
        loader=split_from_times([0.001, 0.001], [0.01, 0.01], 8),
        profile=profile,
    )


def test_observations_survive_the_record_round_trip():
    r = _observed_result()
    back = CellResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r
    assert back.profile.top_ops[0].name == "aten::addmm"
    assert back.memory_timeline[-1].raw == {"InUse": 104}


def test_records_without_observations_still_read():
    d = CellResult(Cell("mlp"), STATUS_OK).to_dict()
    for name in ("memory_timeline", "telemetry", "loader", "profile"):
        d.pop(name)
    back = CellResult.from_dict(d)
    assert back.profile is None and back.memory_timeline == () and back.telemetry is None


def test_the_dataframe_carries_energy_and_profile_columns():
    from hpubench.analysis.frame import to_dataframe

    df = to_dataframe([_observed_result(), CellResult(Cell("gpt"), STATUS_OK)])
    row, plain = df.iloc[0], df.iloc[1]
    assert row["telemetry_source"] == "hlml" and row["power_mean_w"] == pytest.approx(100.0)
    assert row["energy_per_step_j"] == pytest.approx(50.0)
    assert row["energy_resolution_pct"] == pytest.approx(100.0)  # two readings a second apart, 1 s window
    assert row["telemetry_sampler_cpu_pct"] == pytest.approx(0.4)
    assert row["profile_top_op"] == "aten::addmm" and row["profile_trace"] == "traces/x.json"
    assert row["memory_timeline_points"] == 5
    assert plain["power_mean_w"] is None or plain["power_mean_w"] != plain["power_mean_w"]  # None/NaN, not 0


def test_terminal_views_show_every_observation():
    r = _observed_result()
    buf = io.StringIO()
    console = Console(file=buf, width=250)
    for t in observation_tables([r, replace(r, profile=None)], run_dir="RUN"):
        console.print(t)
    text = buf.getvalue()
    for expected in (
        "power and energy",
        "host loader",
        "memory over the steps",
        "top operators",
        "aten::addmm",
    ):
        assert expected in text
    assert "RUN/traces/x.json" in text and "a note" in text
    assert observation_tables([CellResult(Cell("mlp"), STATUS_OK)]) == []


def test_sparkline_shapes_a_series():
    assert sparkline([1, 2, 3]) == "▁▅█"
    assert sparkline([5, 5]) == "▁▁" and sparkline([]) == "" and sparkline([None, 1]) == "?▁"


def test_the_html_report_shows_operator_tables_energy_and_the_loader_split(tmp_path):
    from hpubench.measure.telemetry import absent
    from hpubench.store.rundir import ResultStore
    from reports.api import report

    store = ResultStore(tmp_path / "run")
    store.append(_observed_result())
    store.append(CellResult(Cell("gpt"), STATUS_OK, telemetry=absent("no driver here")))
    report([str(tmp_path / "run")], tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert 'id="profiles"' in page and "aten::addmm" in page
    assert str(tmp_path / "run" / "traces" / "x.json") in page
    assert 'id="energy-table"' in page and "hlml (GAUDI2)" in page
    assert 'id="loader-table"' in page
    assert "no driver here" in page  # absent telemetry is shown with its reason
