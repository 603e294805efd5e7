"""A devices=2 cell trains on one real 2-process torch.distributed group, not on two independent runs.

The cells go through the real launcher (torch's elastic agent, one process per device, the same worker
code as single-device cells). ``HPUBENCH_DDP_CHECK=1`` makes every rank record evidence after its
measured steps: a digest of all its parameters, the gradient of a probe parameter on its own batch
without synchronisation, and the same gradient after DDP's all-reduce. Nothing below is hard-coded: the
expectations are relations between what the ranks measured.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import psutil
import pytest

from hpubench.measure.conditions import plan_threads, thread_policy
from hpubench.measure.stopping import next_check
from hpubench.plan.autosteps import AutoSteps
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.launch import Launcher
from hpubench.store.rundir import ResultStore
from hpubench.strategy.runtime import REPLICA_CHECK_ENV

FAKES = Path(__file__).resolve().parents[1] / "fakes"
MARK = "HPUBENCH_TEST_MARK"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT_HPU", "HPUBENCH_FAKE", "HLS_"))}
    env.pop("HABANA_VISIBLE_MODULES", None)
    env.pop("OMP_NUM_THREADS", None)  # hpubench then chooses the threads per rank
    env.update({REPLICA_CHECK_ENV: "1", MARK: uuid.uuid4().hex}, **extra)
    return env


def _marked(mark: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.environ().get(MARK) == mark and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.Error:
            continue
    return found


def _run(tmp_path: Path, cell: Cell, env: dict[str, str]):
    store = ResultStore(tmp_path / "run")
    with Launcher(base_env=env) as launcher:
        (result,) = launcher.run([PlannedCell(cell)], store, timeout_s=150)
    assert store.load() == [result]
    assert not _marked(env[MARK]), "a process of the cell outlived it"
    return result, store


def _assert_one_data_parallel_model(result, world_size: int) -> None:
    dist = result.runtime["distributed"]
    assert dist["world_size"] == world_size == result.runtime["world_size"]
    assert result.runtime["strategy"] == "ddp"
    checks = dist["replica_check"]
    assert [c["rank"] for c in checks] == list(range(world_size))
    assert len({c["probe"] for c in checks}) == 1
    # one model: every rank holds bit-identical parameters after the measured steps
    assert len({c["param_digest"] for c in checks}) == 1
    # own data per rank: the unsynchronised gradients differ ...
    local = [c["local_grad"] for c in checks]
    assert local[0] != local[1]
    # ... and the all-reduce made every rank's gradient their mean
    synced = [c["synced_grad"] for c in checks]
    assert all(s == pytest.approx(synced[0], rel=1e-6, abs=1e-9) for s in synced)
    mean = [sum(vals) / world_size for vals in zip(*local, strict=True)]
    assert synced[0] == pytest.approx(mean, rel=1e-5, abs=1e-8)
    assert any(abs(v) > 0 for v in mean)


@pytest.mark.slow
def test_two_cpu_devices_form_one_gloo_group_with_global_throughput(tmp_path: Path) -> None:
    cell = Cell("mlp", devices=2, warmup_steps=2, steps=6)
    result, store = _run(tmp_path, cell, _env())
    assert result.status == "ok", (result.reason, result.traceback_tail)
    dist = result.runtime["distributed"]
    assert dist["backend"] == "gloo" and dist["local_world_size"] == 2 and dist["nodes"] == 1
    # the host's cores shared by 2 ranks under the thread policy in force, recorded
    env = _env()
    plan = plan_threads(thread_policy(env), sorted(os.sched_getaffinity(0)), 2, 0, env)
    assert dist["threads_per_rank"] == plan.threads
    assert result.runtime["threads"]["policy"] == plan.policy
    assert result.runtime["threads"]["intra_op"] == plan.threads
    # the other rank and the agent are the cell's own: only outsiders count, so this stays a fraction
    assert 0.0 <= result.runtime["interference"] <= 1.0
    _assert_one_data_parallel_model(result, 2)

    ranks = dist["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1] and len({r["pid"] for r in ranks}) == 2
    assert [r["device_index"] for r in ranks] == [0, 1]
    # global step times: the slower rank's own, whose window is the ranks' wall; global samples: both
    # ranks' batches
    slower = max((r["step_times_s"] for r in ranks), key=sum)
    assert list(result.step_times_s) == pytest.approx(slower)
    m = result.metrics
    batch = result.runtime["batch_size"]
    assert m.samples_per_step == 2 * batch
    assert m.samples_per_s == pytest.approx(2 * batch * len(slower) / sum(slower), rel=1e-6)
    assert result.memory.peak_allocated_bytes == max(r["peak_memory_bytes"] for r in ranks)
    launch = dist["launch"]
    assert "elastic_launch" in launch["launcher"] and launch["nproc_per_node"] == 2
    log = store.log_path(cell.key).read_text()
    assert "elastic agent" in log and "local rank 1" in log
    # rank 0's phase split, with the all-reduce inside backward said (issue 33, item 4)
    phases = result.phases
    assert phases is not None and phases.separable and phases.steps > 0, phases
    assert any("all-reduce" in n for n in phases.notes) and any("rank 0" in n for n in phases.notes)


@pytest.mark.slow
def test_two_hpu_devices_form_an_hccl_group_on_the_double(tmp_path: Path) -> None:
    calls = tmp_path / "calls.log"
    env = _env(PYTHONPATH=str(FAKES), HPUBENCH_FAKE_HPU_CALL_LOG=str(calls))
    cell = Cell("mlp", accelerator="hpu", devices=2, warmup_steps=2, steps=4)
    result, _ = _run(tmp_path, cell, env)
    assert result.status == "ok", (result.reason, result.traceback_tail)
    assert result.runtime["distributed"]["backend"] == "hccl"
    assert "(test double)" in result.runtime["software"]["habana_frameworks"]
    _assert_one_data_parallel_model(result, 2)
    assert result.phases is not None and any("rank 0" in n for n in result.phases.notes)
    # each rank chose its module before the bridge loaded; rank 0's flags are the record's
    flags = result.runtime["env_flags"]
    assert flags["HLS_MODULE_ID"] == "0" and flags["HABANA_VISIBLE_MODULES"] == "0,1"
    created = [line for line in calls.read_text().splitlines() if line.startswith("hccl.create_backend")]
    assert sorted(created) == [
        "hccl.create_backend\trank=0 world_size=2 (gloo underneath)",
        "hccl.create_backend\trank=1 world_size=2 (gloo underneath)",
    ]


@pytest.mark.slow
def test_steps_auto_stops_every_rank_at_the_same_round_end(tmp_path: Path) -> None:
    rule = AutoSteps(target_ci=0.5, min_steps=6, min_time_s=0.0, max_time_s=2.0)
    cell = Cell("mlp", devices=2, warmup_steps=2, steps=None, auto_steps=rule)
    result, _store = _run(tmp_path, cell, _env())
    assert result.status == "ok", (result.reason, result.traceback_tail)
    n = len(result.step_times_s)
    ranks = result.runtime["distributed"]["ranks"]
    assert [len(r["step_times_s"]) for r in ranks] == [n, n]  # rank 0's decision, adopted by rank 1
    ends, k = set(), 0
    while k < n:
        k = next_check(k, rule)
        ends.add(k)
    assert n in ends  # a distributed cell decides at round ends only
    assert result.runtime["steps_stop"].startswith(("target:", "max-time:")), result.runtime["steps_stop"]
    assert result.runtime["compiles_measured"] == 0
