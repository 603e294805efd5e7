"""The plain training loop the benchmarks compare against (``benchmarks/plainloop.py``), alone and as the
plain DDP script under torchrun, and ``verdict_rates.py``'s use of it as a shadow of a smoke cell (the
host's own unstable rate), and its count of cells crowded by their own threads."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAIN_LOOP = ROOT / "benchmarks" / "plainloop.py"
sys.path.insert(0, str(ROOT / "benchmarks"))

import plainloop  # noqa: E402


def _plain(*args: str, ranks: int = 1) -> dict[str, Any]:
    launch = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"] if ranks > 1 else []
    out = subprocess.run(
        [sys.executable, *launch, str(PLAIN_LOOP), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 1, out.stdout  # rank 0 alone prints
    return json.loads(lines[0])


def _verdict_rates() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verdict_rates", ROOT / "benchmarks" / "verdict_rates.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_step_times_are_each_measured_step_and_fit_inside_the_whole_window() -> None:
    r = _plain("mlp", "tiny", "64", "2", "7", "--step-times")
    times = r["step_times_s"]
    assert len(times) == 7 and all(t > 0 for t in times)
    window = 64 * 7 / r["samples_per_s"]  # the figure is work over the whole measured window
    assert sum(times) <= window
    # A plain script: of hpubench only the pure helper naming model directories (and what it imports),
    # nothing that sets a heap, threads, a device or a clock.
    assert not any(m.startswith(("hpubench.run", "hpubench.measure")) for m in r["hpubench_modules"])


def test_without_the_flag_no_step_times_are_printed() -> None:
    assert "step_times_s" not in _plain("mlp", "tiny", "64", "1", "3")


def test_under_torchrun_it_trains_what_a_two_rank_cell_trains(cli, tmp_path: Path) -> None:
    """The same loss after the same steps as hpubench's 2-rank DDP cell: the same model, seeds, per-rank
    batches and optimizer; the step times are the slowest rank's, as the cell's record merges them."""
    args = ["run", "-w", "mlp", "--size", "tiny", "-a", "cpu", "--devices", "2", "--precision", "32-true"]
    done = cli(*args, "--mode", "eager", "--steps", "12", "--no-telemetry", "-o", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    rec = json.loads((tmp_path / "run" / "cells.jsonl").read_text().splitlines()[0])
    assert rec["status"] == "ok", rec["reason"]
    counts = [str(rec["runtime"]["batch_size"]), str(len(rec["warmup_times_s"])), "12"]
    r = _plain("mlp", "tiny", *counts, "--step-times", ranks=2)
    assert r["ranks"] == 2 and len(r["step_times_s"]) == 12
    assert r["loss_last"] == rec["metrics"]["loss_last"]
    alone = _plain("mlp", "tiny", *counts)
    assert alone["loss_last"] != r["loss_last"]  # one process trains on one rank's batches only


def test_the_step_times_are_the_slowest_ranks_and_the_speed_counts_every_rank() -> None:
    ranks = [
        {"elapsed": 2.0, "faults": 4, "loss": 1.0, "times": [0.1, 0.3]},
        {"elapsed": 4.0, "faults": 8, "loss": 3.0, "times": [0.2, 0.25]},
    ]
    got = plainloop.figures(ranks, batch=8, steps=2)
    assert got["step_times_s"] == [0.2, 0.25] and got["loss_last"] == 2.0  # rank 1's, the longer window
    assert got["samples_per_s"] == 8 * 2 * 2 / 4.0 and got["ranks"] == 2


def _record(plain: bool = False, **cell: Any) -> dict[str, Any]:
    """A smoke cell's record as ``verdict_rates`` reads it; ``plain``: under the plain condition."""
    base = {
        "workload": "mlp",
        "size": "tiny",
        "precision": "32-true",
        "mode": "eager",
        "devices": 1,
        "nodes": 1,
    }
    return {
        "key": "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault" + ("/condition=plain" if plain else ""),
        "cell": {**base, **({"extra": {"condition": "plain"}} if plain else {}), **cell},
        "runtime": {"batch_size": 64},
        "warmup_times_s": [0.001] * 3,
        "step_times_s": [0.001] * 12,
    }


def test_each_one_node_cell_on_one_or_two_devices_is_shadowed_with_its_own_work() -> None:
    vr = _verdict_rates()

    def command(plain: bool = False, **cell: Any) -> tuple[list[str], dict[str, str]] | None:
        return vr.shadow_command(_record(plain, **cell))

    loop, env = command()
    assert loop[1:7] == ["mlp", "tiny", "64", "3", "12", "--step-times"] and "--compile" not in loop
    assert loop[loop.index("--precision") + 1] == "32-true" and loop[loop.index("--import") + 1] == "pandas"
    assert loop.count("--import") == 1
    assert env["MALLOC_MMAP_THRESHOLD_"] and env["OMP_NUM_THREADS"] == "1"  # tuned: the cell's threads
    for precision in ("bf16-mixed", "16-mixed", "bf16-true"):
        loop, _ = command(precision=precision)
        assert loop[loop.index("--precision") + 1] == precision
    assert "--compile" in command(mode="compile")[0]
    assert command(devices=2)[0][:2] == ["-m", "torch.distributed.run"]  # the plain DDP script
    loop, env = command(plain=True)
    assert loop[loop.index("--import") + 1] == "pandas"  # the same script as agreement.py's, both conditions
    assert loop.count("--import") == 1
    assert not any(k.startswith("MALLOC_") or k == "OMP_NUM_THREADS" for k in env)  # the process's own
    for unshadowed in (
        {"devices": 4},
        {"nodes": 2},
        {"precision": "fp8"},
        {"mode": "lazy"},
        {"graphs": True},
    ):
        assert command(**unshadowed) is None, unshadowed
    assert isinstance(vr.shadow(_record()), vr.Window)  # ran the plain loop and judged its 12 steps
    assert isinstance(vr.shadow(_record(devices=2)), vr.Window)  # under torchrun


@pytest.mark.slow
def test_the_plain_loop_trains_what_the_cell_trains_in_each_precision_and_compiled(
    cli, tmp_path: Path
) -> None:
    """The same last loss as hpubench's cells, bit for bit, with the precision written with torch alone
    (autocast, a gradient scaler, a bfloat16 model) and torch.compile: the shadows do the cells' work."""
    args = ["run", "-w", "mlp", "--size", "tiny", "-a", "cpu", "--devices", "1", "--steps", "6"]
    args += ["--no-telemetry", "-o", str(tmp_path / "run")]
    eager = cli(*args, "--mode", "eager", "--precision", "32-true,bf16-mixed,16-mixed,bf16-true")
    assert eager.returncode == 0, eager.stderr
    compiled = cli(*args, "--mode", "compile", "--precision", "32-true", "--resume")
    assert compiled.returncode == 0, compiled.stderr
    records = [json.loads(x) for x in (tmp_path / "run" / "cells.jsonl").read_text().splitlines()]
    assert len(records) == 5
    for rec in records:
        assert rec["status"] == "ok", rec["reason"]
        cell = rec["cell"]
        counts = [str(rec["runtime"]["batch_size"]), str(len(rec["warmup_times_s"])), "6"]
        extra = ["--precision", cell["precision"], *(["--compile"] if cell["mode"] == "compile" else [])]
        r = _plain("mlp", "tiny", *counts, *extra)
        assert r["loss_last"] == rec["metrics"]["loss_last"], (rec["key"], r["loss_last"])


def test_the_host_rate_is_the_plain_loops_share_with_the_two_rank_cell_apart(capsys: Any) -> None:
    vr = _verdict_rates()
    assert vr.host_unstable([]) == {}
    assert "no cell shadowed" in capsys.readouterr().out
    w = vr.Window

    def pair(devices: int, cell: tuple[bool, float], plain: tuple[bool, float]) -> Any:
        return vr.Shadowed(devices, w(*cell), w(*plain))

    got = vr.host_unstable(
        [
            pair(1, (True, -0.05), (False, 0.001)),
            pair(1, (False, -0.01), (False, -0.002)),
            pair(1, (False, 0.002), (True, 0.04)),
            pair(1, (True, -0.04), (True, -0.06)),
            pair(2, (True, 0.08), (False, 0.0)),
        ]
    )
    assert {k: {f: v[f] for f in ("cells", "cell_unstable", "plain_unstable")} for k, v in got.items()} == {
        "1": {"cells": 4, "cell_unstable": 2, "plain_unstable": 2},
        "2": {"cells": 1, "cell_unstable": 1, "plain_unstable": 0},
    }
    # the median shift of each side, and which way its unstable windows went
    assert got["1"]["halves"] == {
        "cell": {"median_shift": pytest.approx(-0.025), "unstable": 2, "unstable_faster": 2},
        "plain": {"median_shift": pytest.approx(-0.0005), "unstable": 2, "unstable_faster": 1},
    }
    two_cell = {"median_shift": pytest.approx(0.08), "unstable": 1, "unstable_faster": 0}
    assert got["2"]["halves"]["cell"] == two_cell
    one, one_halves, two, _ = capsys.readouterr().out.splitlines()
    assert "one-device" in one and "unstable 2 of 4 (50.0%)" in one and "no hpubench: 2 of 4 (50.0%)" in one
    assert "cell -2.50% (2 of 2); plain -0.05% (1 of 2)" in one_halves
    assert "2-rank" in two and "torchrun" in two and "unstable 1 of 1 (100.0%)" in two and ": 0 of 1" in two


def test_the_bar_is_judged_only_where_the_hosts_own_loops_stay_within_it() -> None:
    """The one-device plain loops' share decides whether the cells' rates can answer the bar: over it, the
    host alone fails the bar; within it (5% included), the cells' share is hpubench's."""
    vr = _verdict_rates()

    def reading(plain: int, cell: int, n: int = 120) -> str:
        return vr.host_reading({"cells": n, "plain_unstable": plain, "cell_unstable": cell})

    noisy = reading(55, 46)
    assert "not judged" in noisy and "unstable 45.8%, the cells of the same work 38.3%" in noisy
    assert "describe the host" in noisy
    quiet = reading(6, 14)  # 5.0% exactly: within the bar, so the cells' 11.7% is hpubench's to answer for
    assert "judged:" in quiet and "not judged" not in quiet and "cells of the same work 11.7%" in quiet
    assert "not judged" in reading(7, 0)
    assert "not known" in vr.host_reading(None) and "not known" in vr.host_reading({"cells": 0})


def test_a_windows_shift_is_its_second_half_against_its_first() -> None:
    vr = _verdict_rates()
    slow_start = [1.2] * 10 + [1.0] * 40 + [1.0] * 50
    got = vr.window(slow_start)
    assert got == vr.Window(False, 0.0)  # medians: ten slow steps are a minority of their half
    drift = [1.0] * 50 + [0.9] * 50
    assert vr.window(drift) == vr.Window(True, pytest.approx(-0.1))


def test_cells_crowded_by_their_own_threads_are_counted_apart() -> None:
    vr = _verdict_rates()

    def rec(busy: int | None, cpus: list[int]) -> dict[str, Any]:
        rq = {} if busy is None else {"busy_threads": busy, "on_cpu_s": 4.2, "wait_s": 1.8}
        return {"runtime": {"run_queue_detail": rq, "interference_detail": {"cpus": cpus}}}

    assert vr.self_crowded(rec(8, [0, 1]))
    assert not vr.self_crowded(rec(2, [0, 1]))
    assert not vr.self_crowded(rec(None, [0, 1]))
    assert not vr.self_crowded(rec(8, []))  # CPUs unknown: not counted apart
    assert not vr.self_crowded({"runtime": {}})


def test_the_quiet_rounds_run_the_smoke_matrix_with_the_isolation_asked(monkeypatch: Any) -> None:
    """Forked and spawned cells' windows start differently, so the quiet rounds can be run either way."""
    vr = _verdict_rates()
    seen: list[list[str]] = []

    def run_cli(args: Any, timeout: float = 1800) -> list[dict[str, Any]]:
        seen.append(list(args))
        return []

    monkeypatch.setattr(vr, "run_cli", run_cli)
    vr.quiet(2, "spawn")
    assert seen == [["--matrix", "smoke", "--isolation", "spawn"]] * 2
    vr.quiet(1)
    assert seen[-1] == ["--matrix", "smoke", "--isolation", "fork"]
