"""Isolation through the real launcher and zygote: a cell that raises, segfaults, hangs, leaks a child
process or kills its zygote costs that cell only; the run finishes, says why, and leaves no process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from hpubench.errors import UsageError
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.launch import Event, Launcher
from hpubench.store.rundir import ResultStore

REPO = Path(__file__).resolve().parents[2]

WORKLOADS = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time

    import torch
    from torch import nn

    import workloads
    from workloads.base import SizeSpec, Workload

    MARKER = os.environ["HPUBENCH_TEST_MARKER"]


    class _Small(Workload):
        description = "a tiny linear model whose build_model misbehaves on purpose"
        sizes = {"tiny": SizeSpec(4, "tiny"), "standard": SizeSpec(4, "standard")}
        optimizer = "sgd"

        def build_model(self, size):
            return nn.Linear(4, 1)

        def make_batch(self, size, batch_size, device, generator):
            return (torch.randn(batch_size, 4, generator=generator, device=device),)

        def loss(self, model, batch):
            return model(batch[0]).square().mean()


    @workloads.register
    class Boom(_Small):
        name = "boom"

        def build_model(self, size):
            raise ValueError("boom: this workload always fails")


    @workloads.register
    class Segv(_Small):
        name = "segv"

        def build_model(self, size):
            import ctypes

            ctypes.string_at(0)


    @workloads.register
    class Hang(_Small):
        name = "hang"

        def build_model(self, size):
            print("hanging now", flush=True)
            time.sleep(3600)


    @workloads.register
    class Spawner(_Small):
        name = "spawner"

        def build_model(self, size):
            subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(3600)  # {MARKER}"])
            time.sleep(3600)


    @workloads.register
    class ZygoteKiller(_Small):
        name = "zygote_killer"

        def build_model(self, size):
            os.kill(os.getppid(), signal.SIGKILL)
            time.sleep(3600)


    @workloads.register
    class Slow(_Small):
        name = "slow"

        def build_model(self, size):
            time.sleep(0.4)
            return nn.Linear(4, 1)
    """
)


@pytest.fixture
def marker() -> str:
    return f"hpubench-test-{uuid.uuid4().hex}"


@pytest.fixture
def workload_file(tmp_path: Path) -> str:
    path = tmp_path / "misbehaving.py"
    path.write_text(WORKLOADS)
    return str(path)


@pytest.fixture
def env(marker: str) -> dict[str, str]:
    return {**os.environ, "HPUBENCH_TEST_MARKER": marker}


def _cell(workload: str, **kw: object) -> PlannedCell:
    return PlannedCell(Cell(workload, warmup_steps=1, steps=3, **kw))  # type: ignore[arg-type]


def _alive(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE  # an orphan waits for a reaper that may never come
    except psutil.NoSuchProcess:
        return False


def _marked(*needles: str) -> list[psutil.Process]:
    """Live processes whose command line holds one of ``needles``."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(p.info["cmdline"] or [])
        if any(n in cmdline for n in needles) and _alive(p):
            found.append(p)
    return found


def _assert_no_leftovers(*needles: str, extra: list[psutil.Process] | None = None) -> None:
    """Nothing of ours runs: no child of this process, no process naming a needle (the marker that
    grandchildren carry, the workload file that zygotes and their orphaned children name)."""
    deadline = time.monotonic() + 10
    while True:
        candidates = [*_marked(*needles), *psutil.Process().children(recursive=True), *(extra or [])]
        left = [p for p in candidates if _alive(p)]
        if not left:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"processes left behind: {[(p.pid, p.cmdline()) for p in left]}")
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _kill_leftovers(marker: str, workload_file: str) -> Iterator[None]:
    yield
    for p in _marked(marker, workload_file):
        p.kill()


@pytest.mark.slow
@pytest.mark.serial
def test_misbehaving_cells_cost_only_themselves(
    tmp_path: Path, workload_file: str, env: dict, marker: str
) -> None:
    store = ResultStore(tmp_path / "run")
    plan = [
        _cell("mlp"),
        _cell("boom"),
        _cell("segv"),
        _cell("hang"),
        _cell("spawner"),
        _cell("zygote_killer"),
        _cell("mlp", batch_size=3),
        PlannedCell(Cell("mlp", batch_size=5), skip_reason="no such device here"),
    ]
    events: list[Event] = []
    with Launcher([workload_file], base_env=env) as launcher:
        inventory, catalog = launcher.detect()
        assert inventory.count("cpu") >= 1
        assert {"boom", "segv", "hang", "spawner", "mlp"} <= set(catalog)
        t0 = time.monotonic()
        results = launcher.run(plan, store, timeout_s=3, on_event=events.append)
        elapsed = time.monotonic() - t0
    assert [r.key for r in results] == [pc.cell.key for pc in plan]
    names = ["mlp", "boom", "segv", "hang", "spawner", "zygote_killer", "mlp-bs3", "mlp-bs5"]
    by = dict(zip(names, results, strict=True))

    for name in ("mlp", "mlp-bs3"):
        assert by[name].status == "ok", (by[name].reason, by[name].traceback_tail)
        assert by[name].metrics is not None and by[name].metrics.samples_per_s > 0

    boom = by["boom"]
    assert boom.status == "failed" and boom.reason == "ValueError: boom: this workload always fails"
    assert boom.traceback_tail and "build_model" in boom.traceback_tail and "Traceback" in boom.traceback_tail

    segv = by["segv"]
    assert segv.status == "failed" and segv.reason is not None and "signal SIGSEGV" in segv.reason
    assert segv.traceback_tail and "Segmentation fault" in segv.traceback_tail  # faulthandler's stack
    assert "build_model" in segv.traceback_tail

    for name in ("hang", "spawner"):
        r = by[name]
        assert r.status == "failed" and r.reason is not None and r.reason.startswith("timed out after 3 s"), (
            r.reason
        )
        assert r.wall_s is not None and 3 <= r.wall_s < 3 + 2.5
        assert r.traceback_tail and "build_model" in r.traceback_tail  # stack dumped on SIGTERM
    hang_log = store.log_path(by["hang"].key).read_text()
    assert "hanging now" in hang_log

    killer = by["zygote_killer"]
    assert killer.status == "failed" and killer.reason is not None
    assert (
        "worker process died" in killer.reason and "SIGKILL" in killer.reason and "restarted" in killer.reason
    )

    assert by["mlp-bs5"].status == "skipped" and by["mlp-bs5"].reason == "no such device here"

    # every record is in the store, once, as soon as it existed
    assert store.load() == results
    assert len(store.cells_path.read_text().splitlines()) == len(plan)

    kinds = [(e.kind, e.index) for e in events]
    runnable = [i for i, pc in enumerate(plan, 1) if pc.runnable and pc.cell.world_size == 1]
    assert [i for k, i in kinds if k == "started"] == runnable
    assert [i for k, i in kinds if k == "finished"] == runnable
    assert [i for k, i in kinds if k == "skipped"] == [8]
    assert all(e.total == len(plan) for e in events)
    ok_dispatch = [e.dispatch_s for e in events if e.kind == "finished" and e.status == "ok"]
    assert all(d is not None and d < 1.0 for d in ok_dispatch), ok_dispatch
    assert elapsed < 40

    _assert_no_leftovers(marker, workload_file)


def test_a_broken_workload_file_is_one_usage_error_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.py"
    bad.write_text("def oops(:\n")
    for isolation in ("fork", "spawn"):
        with pytest.raises(UsageError) as exc, Launcher([str(bad)], isolation=isolation) as launcher:
            launcher.detect()
        msg = str(exc.value)
        assert "broken.py" in msg and "syntax error" in msg and "\n" not in msg
    _assert_no_leftovers("hpubench.run.forkserver.server --workloads-from " + str(bad))


@pytest.mark.slow
@pytest.mark.serial
def test_spawn_isolation_times_the_cell_not_the_interpreter_start(
    tmp_path: Path, workload_file: str, env: dict, marker: str
) -> None:
    store = ResultStore(tmp_path / "run")
    plan = [_cell("mlp"), _cell("hang")]
    events: list[Event] = []
    with Launcher([workload_file], isolation="spawn", base_env=env) as launcher:
        # importing torch takes longer than this timeout: only the cell itself may count against it
        results = launcher.run(plan, store, timeout_s=2.5, on_event=events.append)
    ok, hang = results
    assert ok.status == "ok", (ok.reason, ok.traceback_tail)
    assert (
        hang.status == "failed"
        and hang.reason is not None
        and hang.reason.startswith("timed out after 2.5 s")
    )
    assert hang.traceback_tail and "build_model" in hang.traceback_tail
    assert store.load() == results
    _assert_no_leftovers(marker, workload_file)


@pytest.mark.slow
@pytest.mark.serial
def test_keyboard_interrupt_kills_the_running_cell_and_leaves_only_whole_records(
    tmp_path: Path, workload_file: str, env: dict, marker: str
) -> None:
    store = ResultStore(tmp_path / "run")
    plan = [_cell("mlp"), _cell("spawner"), _cell("mlp", batch_size=2)]

    def on_event(e: Event) -> None:
        if e.kind == "started" and e.key == plan[1].cell.key:
            # a real SIGINT, as from a terminal, once the grandchild has had time to appear
            threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()

    # As at a terminal: a test session started in the background by a non-interactive shell inherits
    # SIGINT ignored (POSIX), and Python then never raises KeyboardInterrupt for it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt), Launcher([workload_file], base_env=env) as launcher:
            launcher.run(plan, store, timeout_s=60, on_event=on_event)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - t0 < 30
    assert [r.key for r in store.load()] == [plan[0].cell.key]
    assert store.cells_path.read_bytes().endswith(b"\n")
    _assert_no_leftovers(marker, workload_file)


_DRIVER = textwrap.dedent(
    """
    import json, sys
    from hpubench.plan.cell import Cell, PlannedCell
    from hpubench.run.launch import Launcher
    from hpubench.store.rundir import ResultStore

    plan = [PlannedCell(Cell.from_dict(d), r) for d, r in json.loads(sys.argv[3])]
    with Launcher([sys.argv[2]]) as launcher:
        launcher.run(plan, ResultStore(sys.argv[1]), timeout_s=30)
    """
)


@pytest.mark.slow
def test_resume_after_a_killed_run_runs_only_the_missing_cells(
    tmp_path: Path, workload_file: str, env: dict, marker: str
) -> None:
    run_dir = tmp_path / "run"
    store = ResultStore(run_dir)
    plan = [
        _cell("slow", batch_size=1),
        _cell("slow", batch_size=2),
        PlannedCell(Cell("slow", batch_size=9), skip_reason="not here"),
        _cell("slow", batch_size=3),
        _cell("slow", batch_size=4),
    ]
    spec = json.dumps([[pc.cell.to_dict(), pc.skip_reason] for pc in plan])
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(run_dir), workload_file, spec], env=env, cwd=REPO
    )
    try:
        deadline = time.monotonic() + 60
        while not (store.cells_path.exists() and store.cells_path.read_bytes().count(b"\n") >= 1):
            assert driver.poll() is None, "the driver ended before writing a record"
            assert time.monotonic() < deadline, "no record within 60 s"
            time.sleep(0.01)
        descendants = psutil.Process(driver.pid).children(recursive=True)
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait()
    # the zygote notices its launcher is gone and takes its running child with it
    _assert_no_leftovers(marker, workload_file, extra=descendants)
    first = store.load()
    assert 1 <= len(first) < 4 and first[0].key == plan[0].cell.key and first[0].status == "ok"

    events: list[Event] = []
    with Launcher([workload_file], base_env=env) as launcher:
        results = launcher.run(plan, store, timeout_s=30, resume=True, on_event=events.append)
    assert [r.key for r in results] == [pc.cell.key for pc in plan]
    assert [r.status for r in results] == ["ok", "ok", "skipped", "ok", "ok"]
    kept = {e.key for e in events if e.kind == "kept"}
    started = {e.key for e in events if e.kind == "started"}
    assert kept == {r.key for r in first if r.status == "ok"}
    assert not kept & started
    assert kept | started == {pc.cell.key for pc in plan if pc.runnable}

    raw = store.cells_path.read_bytes()
    assert raw.endswith(b"\n")
    lines = [json.loads(line) for line in raw.decode().splitlines()]
    run_keys = [d["key"] for d in lines if d["status"] != "skipped"]
    assert len(run_keys) == len(set(run_keys)) == 4  # every cell ran exactly once over both runs
    assert store.load() == results
    _assert_no_leftovers(marker, workload_file)


def test_cells_sharing_a_workload_and_batch_count_flops_once(tmp_path: Path) -> None:
    plan = [
        _cell("gpt"),
        _cell("gpt", precision="bf16-mixed"),  # same workload, size and batch: the count is handed on
        _cell("gpt", batch_size=3),  # another batch: counted anew
        _cell("gpt", batch_size=3),
    ]
    with Launcher() as launcher:
        launcher.detect()
        results = launcher.run(plan, ResultStore(tmp_path / "run"), timeout_s=120)
    assert [r.status for r in results] == ["ok"] * 4, [(r.reason, r.traceback_tail) for r in results]
    sources = [r.runtime["flops_counted"] for r in results]
    assert sources == ["here", "by an earlier cell of this run", "here", "by an earlier cell of this run"]
    assert results[0].metrics.flops_per_step == results[1].metrics.flops_per_step
    assert results[2].metrics.flops_per_step == results[3].metrics.flops_per_step
    assert results[2].metrics.flops_per_step < results[0].metrics.flops_per_step  # 3 samples vs the default
