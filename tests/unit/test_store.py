"""The results store: what a killed or hand-edited run leaves on disk must still read back correctly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hpubench.analysis.frame import COLUMNS, to_dataframe
from hpubench.errors import UsageError
from hpubench.measure.memory import MemoryStats
from hpubench.plan.cell import Cell
from hpubench.plan.inventory import DeviceInfo, Inventory
from hpubench.store.readback import load_results
from hpubench.store.record import SCHEMA_VERSION, CellResult, Metrics
from hpubench.store.rundir import ResultStore
from hpubench.store.runmeta import run_metadata


def _metrics(sps: float = 100.0) -> Metrics:
    return Metrics(
        measured_steps=10,
        warmup_steps=3,
        samples_per_step=64,
        tokens_per_step=None,
        samples_per_s=sps,
        samples_per_s_ci=(sps - 5, sps + 5),
        tokens_per_s=None,
        tokens_per_s_ci=None,
        confidence=0.95,
        step_time_mean_s=0.64,
        step_time_std_s=0.01,
        step_time_p50_s=0.64,
        step_time_p90_s=0.65,
        step_time_p99_s=0.66,
        first_step_s=2.0,
        warmup_total_s=3.0,
        loss_first=2.3,
        loss_last=2.1,
        flops_per_step=1000,
        achieved_tflops=1e-9,
        peak_tflops=None,
        peak_source=None,
        mfu=None,
    )


def _ok(batch_size: int | None = None, sps: float = 100.0) -> CellResult:
    return CellResult(
        Cell("mlp", batch_size=batch_size),
        "ok",
        metrics=_metrics(sps),
        memory=MemoryStats("process", peak_allocated_bytes=1 << 20, raw={"VmHWM": 1024}),
        runtime={
            "mode_in_force": "eager",
            "device_name": "cpu0",
            "batch_size": 64,
            "software": {"torch": "2.x"},
        },
        step_times_s=(0.64,) * 10,
        started_at="2024-01-01T00:00:00+00:00",
        wall_s=9.0,
    )


def _failed(batch_size: int | None = None, reason: str = "ValueError: boom") -> CellResult:
    return CellResult(Cell("mlp", batch_size=batch_size), "failed", reason=reason, traceback_tail="tb\nlines")


def _skipped(batch_size: int | None = None) -> CellResult:
    return CellResult(Cell("mlp", batch_size=batch_size), "skipped", reason="no such device")


def test_append_then_load_round_trips(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "run")
    records = [_ok(1), _failed(2), _skipped(3)]
    for r in records:
        store.append(r)
    assert store.load() == records
    raw = store.cells_path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 3  # one line per record, newlines escaped inside


def test_load_of_an_empty_run_is_empty(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    assert store.load() == []
    assert store.done_keys() == set()
    assert not store.exists()


def test_later_record_for_the_same_key_wins_at_its_first_position(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(_failed(1))
    store.append(_ok(2))
    store.append(_ok(1, sps=42.0))
    loaded = store.load()
    assert [r.key for r in loaded] == [_ok(1).key, _ok(2).key]
    assert loaded[0].status == "ok" and loaded[0].metrics is not None
    assert loaded[0].metrics.samples_per_s == 42.0


def test_done_keys_hold_ok_and_failed_but_not_skipped(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(_ok(1))
    store.append(_failed(2))
    store.append(_skipped(3))
    store.append(_ok(4))
    store.append(_skipped(4))  # a later skip replaces: the matrix now says the cell cannot run
    assert store.done_keys() == {_ok(1).key, _failed(2).key}


def test_torn_tail_is_ignored_by_load_and_cut_before_the_next_append(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(_ok(1))
    whole = store.cells_path.read_bytes()
    line = json.dumps(_ok(2).to_dict()).encode()
    with open(store.cells_path, "ab") as f:
        f.write(line[: len(line) // 2])  # a write torn by a kill: no newline
    assert [r.key for r in store.load()] == [_ok(1).key]
    assert store.done_keys() == {_ok(1).key}

    store.append(_ok(3))
    raw = store.cells_path.read_bytes()
    assert raw.startswith(whole) and raw.endswith(b"\n")
    assert [r.key for r in store.load()] == [_ok(1).key, _ok(3).key]
    for text in raw.decode().splitlines():
        json.loads(text)  # every line whole again


def test_a_file_that_is_only_a_torn_line_is_emptied_by_append(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.cells_path.write_bytes(b'{"schema": 1, "cel')
    assert store.load() == []
    store.append(_ok(1))
    assert [r.key for r in store.load()] == [_ok(1).key]


def test_corrupt_middle_line_names_file_line_and_fix(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(_ok(1))
    with open(store.cells_path, "ab") as f:
        f.write(b"{not json\n")
    store.append(_ok(2))
    with pytest.raises(UsageError) as exc:
        store.load()
    msg = str(exc.value)
    assert f"{store.cells_path}:2:" in msg and "fix:" in msg
    assert "\n" not in msg


def test_record_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(_ok(1))
    future = _ok(2).to_dict()
    future["schema"] = SCHEMA_VERSION + 1
    with open(store.cells_path, "a") as f:
        f.write(json.dumps(future) + "\n")
    with pytest.raises(UsageError, match=rf"cells\.jsonl:2: .*schema version {SCHEMA_VERSION + 1}.*fix:"):
        store.load()


def test_blank_lines_are_tolerated(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(_ok(1))
    with open(store.cells_path, "a") as f:
        f.write("\n")
    store.append(_ok(2))
    assert len(store.load()) == 2


def test_meta_round_trip_and_missing_meta(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "run")
    assert store.read_meta() is None
    store.write_meta({"a": 1, "nested": {"b": [1, 2]}})
    assert store.read_meta() == {"a": 1, "nested": {"b": [1, 2]}}
    assert store.exists()
    assert [p.name for p in store.run_dir.iterdir()] == ["meta.json"]  # no temp file left behind


def test_corrupt_meta_is_a_usage_error(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.meta_path.write_text("{")
    with pytest.raises(UsageError, match=r"meta\.json is not valid JSON"):
        store.read_meta()


def test_log_paths_are_plain_file_names_inside_the_run(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    key = Cell("mlp", options=(("depth", "a b/c"),)).key
    path = store.log_path(key)
    assert path.parent == tmp_path / "logs"
    assert "/" not in path.name and " " not in path.name


def test_load_results_accepts_run_dirs_and_files(tmp_path: Path) -> None:
    a, b = ResultStore(tmp_path / "a"), ResultStore(tmp_path / "b")
    a.append(_ok(1))
    a.append(_failed(1))
    b.append(_ok(1))
    loaded = load_results([str(a.run_dir), str(b.cells_path)])
    # deduplicated within a run, both kept across runs (comparing runs is the point)
    assert [r.status for r in loaded] == ["failed", "ok"]


def test_load_results_missing_paths_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_results([str(tmp_path / "nope")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"no cells\.jsonl"):
        load_results([str(tmp_path / "empty")])


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_load_results_unreadable_file_is_a_usage_error(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(_ok(1))
    store.cells_path.chmod(0)
    with pytest.raises(UsageError, match="cannot read"):
        load_results([str(store.cells_path)])


def test_dataframe_has_one_flat_row_per_cell_in_a_stable_column_order(tmp_path: Path) -> None:
    df = to_dataframe([_ok(1), _failed(2), _skipped(3)])
    assert list(df.columns) == list(COLUMNS)
    assert len(df) == 3
    for col in (
        "key",
        "workload",
        "status",
        "reason",
        "samples_per_s",
        "samples_per_s_lo",
        "samples_per_s_hi",
        "tokens_per_s_lo",
        "memory_peak_allocated_bytes",
        "mode_in_force",
        "device_name",
        "batch_size_resolved",
        "torch_version",
        "measured_warmup_steps",
    ):
        assert col in df.columns, col
    ok = df.iloc[0]
    assert ok["samples_per_s_lo"] == 95.0 and ok["samples_per_s_hi"] == 105.0
    assert ok["memory_peak_allocated_bytes"] == 1 << 20 and ok["memory_source"] == "process"
    assert ok["batch_size_resolved"] == 64 and ok["batch_size"] == 1 and ok["torch_version"] == "2.x"
    assert ok["warmup_steps"] == 3 and ok["measured_warmup_steps"] == 3
    failed = df.iloc[1]
    assert failed["status"] == "failed" and failed["reason"] == "ValueError: boom"
    assert failed["samples_per_s"] is None or failed["samples_per_s"] != failed["samples_per_s"]  # None/NaN
    assert list(to_dataframe([]).columns) == list(COLUMNS)


def test_store_modules_do_not_import_pandas_or_torch() -> None:
    code = (
        "import sys, hpubench.store.rundir, hpubench.store.readback, hpubench.analysis.frame, "
        "hpubench.store.runmeta; print('pandas' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_run_metadata_gathers_host_invocation_and_inventory(tmp_path: Path) -> None:
    inv = Inventory((DeviceInfo("cpu", 2, "Xeon"),))
    meta = run_metadata(argv=["hpubench", "run"], inventory=inv, cwd=tmp_path, spec_name="smoke")
    assert meta["command_line"] == ["hpubench", "run"]
    assert meta["inventory"] == {"cpu": {"count": 2, "device_name": "Xeon"}}
    assert meta["git"] is None  # tmp_path is no checkout: absence is fine
    assert meta["spec_name"] == "smoke"
    for key in ("hostname", "platform", "python_version", "hpubench_version", "started_at"):
        assert meta[key]
    json.dumps(meta)


_WRITER = textwrap.dedent(
    """
    import sys
    from hpubench.plan.cell import Cell
    from hpubench.store.record import CellResult
    from hpubench.store.rundir import ResultStore

    store = ResultStore(sys.argv[1])
    # long reasons make each write big enough that a kill lands inside one sometimes
    reason = "x" * 200_000
    i = 0
    while True:
        store.write_meta({"i": i, "padding": reason})
        store.append(CellResult(Cell("mlp", batch_size=i + 1), "failed", reason=reason))
        i += 1
        if i == 3:
            print("going", flush=True)
    """
)


@pytest.mark.parametrize("delay_s", [0.0, 0.05, 0.2])
def test_a_killed_writer_leaves_a_valid_store(tmp_path: Path, delay_s: float) -> None:
    run = tmp_path / "run"
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(run)], stdout=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "going\n"
            time.sleep(delay_s)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    store = ResultStore(run)
    meta = store.read_meta()
    assert meta is not None and isinstance(meta["i"], int)
    loaded = store.load()
    assert len(loaded) >= 3
    assert [r.cell.batch_size for r in loaded] == list(range(1, len(loaded) + 1))
    store.append(_ok(10_000))  # and it is appendable: a torn tail, if any, was cut off
    assert store.load()[-1].cell.batch_size == 10_000
