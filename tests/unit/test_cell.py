from dataclasses import replace

import pytest

from hpubench.measure.memory import MemoryStats
from hpubench.plan import dimensions
from hpubench.plan.autosteps import AutoSteps
from hpubench.plan.cell import FIRST_RELEASE_DIMENSIONS, Cell
from hpubench.store.record import CellResult, Metrics
from hpubench.store.recordcheck import MAX_STEP_S, RUNTIME_KINDS, RecordError, check_record
from tests.badinput.records import good_record, with_path


def test_key_is_stable_and_leaves_out_step_counts():
    a = Cell("gpt", "tiny", "cpu", precision="bf16-mixed", steps=20)
    b = Cell("gpt", "tiny", "cpu", precision="bf16-mixed", steps=200, warmup_steps=9)
    assert a.key == b.key == "gpt/tiny/cpu/1x1/bf16-mixed/eager/nographs/bsdefault"


def test_match_key_drops_hardware_only():
    hpu = Cell("bert", "standard", "hpu", devices=8, batch_size=32)
    cuda = Cell("bert", "standard", "cuda", devices=8, batch_size=32)
    assert hpu.key != cuda.key
    assert hpu.match_key == cuda.match_key
    assert "8x1" in hpu.match_key and "bs32" in hpu.match_key


def test_options_are_sorted_into_the_key():
    a = Cell("mlp", options=(("b", "2"), ("a", "1")))
    b = Cell("mlp", options=(("a", "1"), ("b", "2")))
    assert a == b and a.key.endswith("a=1/b=2")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"devices": 0},
        {"nodes": 0},
        {"batch_size": 0},
        {"steps": 1},
        {"warmup_steps": 0},
        {"devices": 2, "device_ids": (0,)},
    ],
)
def test_invalid_cells_are_refused(kwargs):
    with pytest.raises(ValueError):
        Cell("mlp", **kwargs)


def test_dict_round_trip_and_unknown_fields():
    c = Cell("resnet", "tiny", "hpu", devices=2, device_ids=(1, 3), graphs=True, options=(("x", "1"),))
    assert Cell.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="unknown cell field"):
        Cell.from_dict({**c.to_dict(), "colour": "red"})


def test_record_round_trip_keeps_metrics_memory_and_steps():
    m = Metrics(
        measured_steps=3,
        warmup_steps=1,
        samples_per_step=8,
        tokens_per_step=None,
        samples_per_s=100.0,
        samples_per_s_ci=(90.0, 110.0),
        tokens_per_s=None,
        tokens_per_s_ci=None,
        confidence=0.95,
        step_time_mean_s=0.08,
        step_time_std_s=0.01,
        step_time_p50_s=0.08,
        step_time_p90_s=0.09,
        step_time_p99_s=0.095,
        first_step_s=0.5,
        warmup_total_s=0.5,
        loss_first=2.3,
        loss_last=2.1,
        flops_per_step=10**9,
        achieved_tflops=0.0125,
        peak_tflops=None,
        peak_source=None,
        mfu=None,
    )
    mem = MemoryStats("hpu.memory_stats", 10, 5, 100, 3, 2, raw={"MaxInUse": 10})
    r = CellResult(
        Cell("mlp"), "ok", metrics=m, memory=mem, step_times_s=(0.07, 0.08, 0.09), warmup_times_s=(0.5,)
    )
    back = CellResult.from_dict(r.to_dict())
    assert back == r
    assert r.to_dict()["key"] == Cell("mlp").key


def test_record_refuses_other_schema_versions():
    d = CellResult(Cell("mlp"), "skipped", reason="x").to_dict()
    d["schema"] = 99
    with pytest.raises(ValueError, match="schema"):
        CellResult.from_dict(d)


def test_auto_steps_cells_share_the_key_and_round_trip():
    auto = Cell("mlp", steps=None, auto_steps=AutoSteps(target_ci=0.05, max_time_s=3))
    assert Cell("mlp", steps=None).auto_steps == AutoSteps()  # auto with the defaults
    assert auto.key == Cell("mlp", steps=50).key
    assert Cell.from_dict(auto.to_dict()) == auto
    assert replace(auto, steps=50) == Cell("mlp", steps=50)  # a fixed count drops the auto settings
    old = Cell("mlp").to_dict()
    del old["auto_steps"]  # a record written before --steps auto existed
    assert Cell.from_dict(old) == Cell("mlp")


def test_every_dimension_is_a_cell_field_and_only_the_first_releases_are_required():
    """The record check reads its required fields from the cell's declaration: a dimension added later
    may be absent from an old record (read as its default); one of the first release may not."""
    written = Cell(workload="mlp").to_dict()
    # the declared dimensions that are Cell fields (a later one may live in Cell.extra, like strategy)
    declared = [n for n in dimensions.names() if n in written]
    assert set(FIRST_RELEASE_DIMENSIONS) <= set(declared)
    assert set(declared) <= set(written) and len(set(declared)) == len(declared)
    for name in declared:
        cell = {k: v for k, v in written.items() if k != name}
        if name in FIRST_RELEASE_DIMENSIONS:
            with pytest.raises(RecordError, match=f"cell.{name}"):
                check_record({"cell": cell, "status": "ok"})
        else:
            check_record({"cell": cell, "status": "ok"})
            assert getattr(Cell.from_dict(cell), name) == getattr(Cell(workload="mlp"), name)


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("step_times_s", [0.1, 0.0], "step_times_s[1]"),
        ("step_times_s", [0.1, 1e308], "step_times_s[1]"),
        ("warmup_times_s", [0.0], "warmup_times_s[0]"),
        ("metrics.samples_per_s", 0.0, "metrics.samples_per_s"),
        ("metrics.step_time_mean_s", 0.0, "metrics.step_time_mean_s"),
        ("metrics.step_time_p50_s", 0.0, "metrics.step_time_p50_s"),
        ("metrics.samples_per_step", 0, "metrics.samples_per_step"),
    ],
)
def test_values_readers_divide_by_are_refused(path: str, value: object, field: str) -> None:
    """A record the statistics cannot use (a zero divisor, a sum that overflows) is refused where it is
    read, not left to crash report, compare or gate; the largest plausible step still reads."""
    record = good_record()
    check_record(with_path(record, "step_times_s", [MAX_STEP_S, 1e-9]))
    with pytest.raises(RecordError) as caught:
        check_record(with_path(record, path, value))
    assert caught.value.field == field


def test_every_runtime_fact_has_a_kind_the_record_check_knows() -> None:
    """A fact declared with a new kind (a list, say) would go unchecked: the check must learn it first."""
    assert set(RUNTIME_KINDS.values()) == {"str", "int", "float", "Facts"}


def test_the_graph_capture_a_worker_records_reads_back() -> None:
    """The worker records the capture in force by name (hpubench.run.trainstep): the runtime's declared
    kind must accept what the writer writes, or every graphs cell's record is refused as unreadable."""
    record = good_record()
    check_record(with_path(record, "runtime.graphs", "HPU graphs (inside torch.compile)"))
    with pytest.raises(RecordError):
        check_record(with_path(record, "runtime.graphs", {"capture": "HPU graphs"}))
