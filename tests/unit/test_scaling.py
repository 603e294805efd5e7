"""Scaling efficiency (pure): which baseline an N-device cell is compared with, and the arithmetic."""

from __future__ import annotations

import pytest

from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.scaling import scaling_efficiencies, workload_identity
from hpubench.plan.cell import Cell
from hpubench.store.record import CellResult


def result(
    sps_step_s: float,
    *,
    devices: int = 1,
    nodes: int = 1,
    precision: str = "32-true",
    status: str = "ok",
    device_name: str | None = "cpu-x",
    started_at: str | None = "2025-01-01T00:00:00+00:00",
    batch: int = 32,
    workload: str = "mlp",
) -> CellResult:
    """A record whose every step takes ``sps_step_s`` with ``batch`` samples per device."""
    cell = Cell(workload, devices=devices, nodes=nodes, precision=precision)
    world = cell.world_size
    metrics = None
    if status == "ok":
        metrics = build_metrics(
            warmup_s=[sps_step_s],
            measured_s=[sps_step_s] * 5,
            loss_first=1.0,
            loss_last=0.5,
            samples_per_step=batch * world,
            tokens_per_step=None,
            flops_per_step=None,
            world_size=world,
            peak=None,
        )
    runtime = {} if device_name is None else {"device_name": device_name}
    return CellResult(cell, status, metrics=metrics, runtime=runtime, started_at=started_at)


def test_efficiency_is_throughput_over_n_times_the_single_device_throughput() -> None:
    one = result(0.1)  # 320 samples/s
    two = result(0.125, devices=2)  # 64 samples / 0.125 s = 512 samples/s
    eight = result(0.2, devices=4, nodes=2)  # 256 / 0.2 = 1280 samples/s
    s = scaling_efficiencies([one, two, eight])
    assert s[0] is None
    assert s[1] is not None and s[1].world_size == 2
    assert s[1].samples_per_s == pytest.approx(512.0)
    assert s[1].baseline_samples_per_s == pytest.approx(320.0)
    assert s[1].speedup == pytest.approx(1.6)
    assert s[1].efficiency == pytest.approx(0.8)
    assert s[1].baseline_key == one.key
    assert s[2] is not None and s[2].efficiency == pytest.approx(1280 / (8 * 320))


def test_only_the_same_workload_size_precision_and_mode_match() -> None:
    base_bf16 = result(0.1, precision="bf16-mixed")
    two_fp32 = result(0.1, devices=2)
    other_workload = result(0.1, workload="gpt")
    assert scaling_efficiencies([base_bf16, other_workload, two_fp32]) == [None, None, None]
    assert workload_identity(Cell("mlp", devices=2)) == workload_identity(Cell("mlp", nodes=3))
    assert workload_identity(Cell("mlp", batch_size=8)) != workload_identity(Cell("mlp"))


def test_failed_cells_have_no_efficiency_and_are_no_baseline() -> None:
    failed_base = result(0.1, status="failed")
    two = result(0.1, devices=2)
    assert scaling_efficiencies([failed_base, two]) == [None, None]
    assert scaling_efficiencies([result(0.1), result(0.1, devices=2, status="failed")]) == [None, None]


def test_baseline_comes_from_the_same_device_and_the_closest_run() -> None:
    gaudi_base = result(0.1, device_name="GAUDI2", started_at="2025-01-01T00:00:00+00:00")
    old_base = result(0.2, started_at="2024-06-01T00:00:00+00:00")
    new_base = result(0.1, started_at="2025-01-01T10:00:00+00:00")
    two = result(0.1, devices=2, started_at="2025-01-01T10:05:00+00:00")
    s = scaling_efficiencies([gaudi_base, old_base, new_base, two])
    assert s[3] is not None and s[3].baseline_samples_per_s == pytest.approx(320.0)  # new_base, not old
    # without times, the nearest record in the list wins (records of one run are read together)
    a = [result(0.2, started_at=None), result(0.2, devices=2, started_at=None)]
    b = [result(0.1, started_at=None), result(0.1, devices=2, started_at=None)]
    s = scaling_efficiencies(a + b)
    assert s[1] is not None and s[1].efficiency == pytest.approx(1.0)
    assert s[3] is not None and s[3].efficiency == pytest.approx(1.0)
