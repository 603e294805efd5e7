"""The plain training loop the benchmarks compare against (``benchmarks/plainloop.py``), and
``verdict_rates.py``'s use of it as a shadow of a smoke cell (the host's own unstable rate), and its count
of cells crowded by their own threads."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PLAIN_LOOP = ROOT / "benchmarks" / "plainloop.py"


def _plain(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(PLAIN_LOOP), *args], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _verdict_rates() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("verdict_rates", ROOT / "benchmarks" / "verdict_rates.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
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


def _record(key_suffix: str = "", **cell: Any) -> dict[str, Any]:
    base = {
        "workload": "mlp",
        "size": "tiny",
        "precision": "32-true",
        "mode": "eager",
        "devices": 1,
        "nodes": 1,
    }
    return {
        "key": "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault" + key_suffix,
        "cell": {**base, **cell},
        "runtime": {"batch_size": 64},
        "warmup_times_s": [0.001] * 3,
        "step_times_s": [0.001] * 12,
    }


def test_a_tuned_fp32_eager_cell_is_shadowed_and_others_are_not() -> None:
    vr = _verdict_rates()
    assert vr.shadow(_record()) in (True, False)  # ran the plain loop and judged its 12 steps
    assert vr.shadow(_record(precision="bf16-mixed")) is None
    assert vr.shadow(_record(mode="compile")) is None
    assert vr.shadow(_record(devices=2)) is None
    assert vr.shadow(_record("/condition=plain")) is None


def test_the_host_rate_is_the_plain_loops_share(capsys: Any) -> None:
    vr = _verdict_rates()
    assert vr.host_unstable([]) is None
    assert vr.host_unstable([(True, False), (False, False), (False, True), (True, True)]) == 0.5
    out = capsys.readouterr().out
    assert "unstable 2 of 4 (50.0%)" in out and "no hpubench: 2 of 4 (50.0%)" in out


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
