"""The hpubench side of ``overhead.py``: cells run through the real ``Launcher``, each reduced to a
throughput round or a fixed-cost row, and part 2, the fixed costs: per cell (fork and spawn isolation,
against a fresh interpreter per cell) and the bookkeeping around each step. Measuring only; the report is
``overhead_report.py``. torch and hpubench are imported inside the functions: overhead.py imports this
module before it sets OMP_NUM_THREADS, which must be in force before anything imports torch."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CELL_TIMEOUT_S = 600.0
FIXED_OTHER = ("gpt", "resnet", "bert")  # one cell each


def spread(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def bookkeeping_costs() -> dict[str, Any]:
    """What hpubench adds around each CPU step, in a forked child: sync call, clock reads, loss copy."""
    import torch

    from hpubench.accelerators.cpu import CPUAccelerator

    acc = CPUAccelerator(0)
    n = 200_000
    t0 = time.perf_counter()
    for _ in range(n):
        acc.synchronize()
    sync_s = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        time.perf_counter()
    clock_s = (time.perf_counter() - t0) / n
    loss = torch.ones((), requires_grad=True) * 2.0
    m = 20_000
    t0 = time.perf_counter()
    for _ in range(m):
        loss.item()
    item_s = (time.perf_counter() - t0) / m
    return {"synchronize_call_s": sync_s, "perf_counter_call_s": clock_s, "loss_item_s": item_s}


# ---- hpubench side -------------------------------------------------------------------------------------


class EventClock:
    """Wall time between a cell's "started" and "finished" launcher events, plus the finished event."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.finished: float | None = None
        self.event: Any = None

    def __call__(self, event: Any) -> None:
        if event.kind == "started":
            self.started = time.perf_counter()
        elif event.kind == "finished":
            self.finished = time.perf_counter()
            self.event = event

    @property
    def cell_s(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return self.finished - self.started


def run_cell(launcher: Any, cell: Any, store_dir: Path) -> tuple[Any, EventClock]:
    from hpubench.plan.cell import PlannedCell
    from hpubench.store.rundir import ResultStore

    clock = EventClock()
    (result,) = launcher.run(
        [PlannedCell(cell)], ResultStore(store_dir), timeout_s=CELL_TIMEOUT_S, on_event=clock
    )
    return result, clock


def fixed_cost_row(result: Any, clock: EventClock) -> dict[str, Any]:
    rt = result.runtime or {}
    overhead = clock.cell_s - result.wall_s if (clock.cell_s is not None and result.wall_s) else None
    ev = clock.event
    return {
        "status": result.status,
        "reason": result.reason,
        "dispatch_to_child_s": ev.dispatch_s if ev is not None else None,
        "dispatch_to_first_step_s": rt.get("dispatch_to_first_step_s"),
        "setup_s": rt.get("setup_s"),
        "flops_count_s": rt.get("flops_count_s"),
        "worker_wall_s": result.wall_s,
        "event_wall_s": ev.wall_s if ev is not None else None,
        "cell_wall_s": clock.cell_s,
        "launcher_overhead_s": overhead,
    }


def hpubench_round(launcher: Any, cell: Any, store_dir: Path) -> dict[str, Any]:
    """One round of the hpubench side: the cell run through the launcher, reduced to what is compared."""
    r, _ = run_cell(launcher, cell, store_dir)
    m = r.metrics
    return {
        "status": r.status,
        "reason": r.reason,
        "samples_per_s": m.samples_per_s if m else None,
        "sum_step_s": sum(r.step_times_s) if r.step_times_s else None,
        "step_p50_s": m.step_time_p50_s if m else None,
        "step_min_s": min(r.step_times_s) if r.step_times_s else None,
        "loss_last": m.loss_last if m else None,
        "torch_threads": (r.runtime.get("env_flags") or {}).get("torch_num_threads"),
    }


# ---- part 2: fixed cost ----------------------------------------------------------------------------------


def measure_fixed_cost(launcher: Any, n_mlp: int, tmp: Path, device: str) -> dict[str, Any]:
    from hpubench.plan.cell import Cell

    rows = []
    print(f"  {n_mlp} tiny mlp cells ", end="", flush=True)
    for i in range(n_mlp):
        r, clock = run_cell(launcher, Cell("mlp", "tiny", device, warmup_steps=1, steps=2), tmp / f"fx-{i}")
        rows.append(fixed_cost_row(r, clock))
        print(".", end="", flush=True)
    print()
    others = {}
    for name in FIXED_OTHER:
        print(f"  one tiny {name} cell", flush=True)
        r, clock = run_cell(launcher, Cell(name, "tiny", device, warmup_steps=1, steps=2), tmp / f"fx-{name}")
        others[name] = fixed_cost_row(r, clock)

    def col(key: str) -> dict[str, float | None]:
        return spread([row[key] for row in rows if row.get(key) is not None])

    return {
        "mlp_cells": n_mlp,
        "mlp": {
            k: col(k)
            for k in (
                "dispatch_to_child_s",
                "dispatch_to_first_step_s",
                "setup_s",
                "flops_count_s",
                "worker_wall_s",
                "launcher_overhead_s",
                "cell_wall_s",
            )
        },
        "mlp_first_cell": rows[0] if rows else None,
        "mlp_rows": rows,
        "event_wall_equals_record_wall": all(r["event_wall_s"] == r["worker_wall_s"] for r in rows),
        "one_cell_each": others,
    }


def measure_naive(repeats: int) -> dict[str, Any]:
    out = {}
    variants = (("import torch", "import torch"), ("import torch, torch._dynamo", "import torch._dynamo"))
    for label, code in variants:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - t0)
        out[label] = spread(times)
        print(f"  fresh interpreter, {label}: {repeats}x", flush=True)
    return out


def measure_spawn(n: int, tmp: Path, device: str) -> dict[str, Any]:
    from hpubench.plan.cell import Cell
    from hpubench.run.launch import Launcher

    rows = []
    with Launcher(isolation="spawn") as launcher:
        for i in range(n):
            cell = Cell("mlp", "tiny", device, warmup_steps=1, steps=2)
            r, clock = run_cell(launcher, cell, tmp / f"sp-{i}")
            rows.append(fixed_cost_row(r, clock))
    print(f"  {n} tiny mlp cell(s) with isolation='spawn'", flush=True)
    return {
        "cells": n,
        "dispatch_to_first_step_s": spread(
            [r["dispatch_to_first_step_s"] for r in rows if r["dispatch_to_first_step_s"] is not None]
        ),
        "launcher_overhead_s": spread(
            [r["launcher_overhead_s"] for r in rows if r["launcher_overhead_s"] is not None]
        ),
        "rows": rows,
    }
