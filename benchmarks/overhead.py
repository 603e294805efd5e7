"""What hpubench itself costs: its effect on measured throughput, and its fixed cost per cell.

Run with ``make bench`` or
``python benchmarks/overhead.py [--quick] [--json PATH] [--rounds N] [--threads N]``.
It prints figures and never asserts on timings; it is not part of the test suite. CPU only.

1. Throughput overhead. For mlp, gpt and resnet at size tiny, one real cell (fork isolation, the real
   ``Launcher``, fresh result store each time) is set against a bare, hand-written PyTorch loop doing the
   same work: same model and seed, the same four synthetic batches cycled in the same order, same batch
   size, optimizer and learning rate, same warm-up and measured step counts. The bare loop (``bareloop.py``)
   runs in a child forked from this process after ``import torch`` and before any torch op, which is how
   hpubench's zygote makes its cell children, so both sides run in a fresh process with the threads (and
   affinity) hpubench's CPU thread policy gives a one-process cell (``HPUBENCH_CPU_THREADS``, default
   cores-1; reported). The bare loop is timed the simplest honest way: one ``perf_counter`` around the whole
   measured loop after the warm-up, samples/s = batch size x steps / elapsed. No device sync is called:
   CPU ops are synchronous, so there is nothing to wait for (on CUDA or HPU the bare loop would need one
   sync before stopping the clock). hpubench's figure is the one in its record: batch size x steps over the
   sum of the individually timed steps. The two sides alternate (A/B, then B/A) over several rounds;
   the report gives medians, the paired ratio hpubench/bare per round (1.00 = no overhead) with its
   min-max spread, and checks that both sides ended on the same loss (the same work was done).

2. Per-cell fixed cost. Several tiny mlp cells (2 measured steps, 1 warm-up; each into its own store)
   run through the Launcher; reported are ``runtime["dispatch_to_first_step_s"]`` (request sent ->
   first training step starts, which includes building the model and data and counting FLOPs), the
   launcher's dispatch -> child running figure, and the launcher's own per-cell overhead: wall time
   between the launcher's "started" and "finished" events minus the worker's ``wall_s`` (fork, result
   file, reap, store append with fsync). The zygote start (``Launcher.zygote_start_s``, paid once per
   run) is reported beside the cost a naive one-interpreter-per-cell design pays every cell: a fresh
   ``python -c "import torch"`` (median of 3), plus ``torch._dynamo`` which every optimizer imports, and
   hpubench's own ``isolation="spawn"``. gpt, resnet and bert get one cell each, since their FLOP
   counting (on the meta device) costs more per cell than mlp's.

On a machine shared with other work the throughput figures are noisy, badly so with several torch threads
(a step stalls while any of its threads is descheduled), so the report also prints the load average and the
CPU time other processes used during the run, and the ratio of the fastest rounds. ``--threads N`` sets
``OMP_NUM_THREADS`` for both sides; ``--rounds N`` changes the number of A/B rounds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hostspeed  # benchmarks/ is on sys.path: these run as scripts
from bareloop import bare_loop
from outpath import json_out_problem
from overhead_cells import (
    bookkeeping_costs,
    hpubench_round,
    measure_fixed_cost,
    measure_naive,
    measure_spawn,
    spread,
)
from overhead_report import print_report

from hpubench import accelerators
from hpubench.analysis.stats.medianci import median_interval
from hpubench.plan.autosteps import AutoSteps

MIN_WARMUP_STEPS = 5
# Warm-up of both sides, in seconds: ``--steps auto``'s own minimum (``AutoSteps().min_time_s``), so the
# comparison is made in the regime users measure in. With 5 warm-up steps (the old fixed count) a tiny
# CPU cell is still speeding up, and by how much depends on the process it was forked from (up to 3%).
WARMUP_S = AutoSteps().min_time_s
CALIBRATION_STEPS = 50  # steps timed once per workload to turn WARMUP_S into a step count
# (workload, measured steps) for the throughput comparison, full and --quick.
THROUGHPUT_PLAN = {
    "full": [("mlp", 200), ("gpt", 60), ("resnet", 40)],
    "quick": [("mlp", 60), ("gpt", 20)],
}
ROUNDS = {"full": 5, "quick": 2}
FIXED_CELLS = {"full": 12, "quick": 4}  # tiny mlp cells for the per-cell fixed cost
NAIVE_REPEATS = {"full": 3, "quick": 2}
SPAWN_CELLS = {"full": 2, "quick": 1}


# ---- small helpers --------------------------------------------------------------------------------------


def _loadavg() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def _host_busy_s() -> float | None:
    """CPU seconds the whole machine spent busy since boot (all cores), from /proc/stat; None elsewhere."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    """CPU seconds used by this process and every descendant reaped so far (zygote and cells included)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _in_fork(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``fn`` in a forked child and return its JSON-able result (or {"error": ...})."""
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 0
        try:
            os.close(r)
            try:
                payload = fn()
            except BaseException:
                payload = {"error": traceback.format_exc()}
                code = 1
            data = json.dumps(payload).encode()
            while data:
                data = data[os.write(w, data) :]
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    with os.fdopen(r, "rb") as f:
        while chunk := f.read(65536):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return {"error": f"child ended without a result (wait status {status})"}


# ---- part 1: throughput ----------------------------------------------------------------------------------


def warmup_plan(step_s: float, warmup_s: float) -> int:
    """Warm-up steps lasting about ``warmup_s`` at ``step_s`` a step, at least MIN_WARMUP_STEPS."""
    return max(MIN_WARMUP_STEPS, math.ceil(warmup_s / max(step_s, 1e-9)))


def calibrate_step_s(name: str, bs: int, device: str) -> float:
    """Seconds a bare step of ``name`` takes on ``device``, so both sides get the same step counts."""
    calib = _in_fork(
        lambda n=name, b=bs: bare_loop(n, "tiny", b, MIN_WARMUP_STEPS, CALIBRATION_STEPS, accelerator=device)
    )
    if "error" in calib:
        raise SystemExit(
            f"{name}: the bare loop failed on {device}: {calib['error'].strip().splitlines()[-1]}"
        )
    return calib["elapsed_s"] / CALIBRATION_STEPS


def ab_rounds(
    launcher: Any, cell: Any, bs: int, rounds: int, tmp: Path, device: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Both sides ``rounds`` times, alternating which goes first, so drift of the machine hits both alike."""
    name, warmup, steps = cell.workload, cell.warmup_steps, cell.steps
    hp: list[dict[str, Any]] = []
    bare: list[dict[str, Any]] = []
    for rnd in range(rounds):
        order = ("hpubench", "bare") if rnd % 2 == 0 else ("bare", "hpubench")
        for side in order:
            if side == "hpubench":
                hp.append(hpubench_round(launcher, cell, tmp / f"tp-{name}-{rnd}"))
            else:
                bare.append(
                    _in_fork(
                        lambda n=name, b=bs, w=warmup, s=steps: bare_loop(
                            n, "tiny", b, w, s, accelerator=device
                        )
                    )
                )
        print(".", end="", flush=True)
    print()
    return hp, bare


def compare_sides(hp: list[dict[str, Any]], bare: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one workload's rounds: each side's samples/s, their paired ratio, and the losses."""
    ratios = [
        h["samples_per_s"] / b["samples_per_s"]
        for h, b in zip(hp, bare, strict=True)
        if h.get("samples_per_s") and b.get("samples_per_s")
    ]
    hp_sps = [h["samples_per_s"] for h in hp if h.get("samples_per_s")]
    bare_sps = [b["samples_per_s"] for b in bare if b.get("samples_per_s")]
    loss_pairs = [
        (h["loss_last"], b["loss_last"])
        for h, b in zip(hp, bare, strict=True)
        if h.get("loss_last") is not None and b.get("loss_last") is not None
    ]
    errors = [h["reason"] for h in hp if h.get("status") != "ok"] + [
        b["error"].strip().splitlines()[-1] for b in bare if "error" in b
    ]
    return {
        "hpubench_samples_per_s": spread(hp_sps),
        "bare_samples_per_s": spread(bare_sps),
        "ratio_hpubench_over_bare": spread(ratios),
        "ratio_median_interval": vars(median_interval(ratios)) if ratios else None,
        # Fastest round of each side: the one least disturbed by anything else on the machine.
        "ratio_best_rounds": max(hp_sps) / max(bare_sps) if hp_sps and bare_sps else None,
        "max_abs_loss_diff": max((abs(a - b) for a, b in loss_pairs), default=None),
        "torch_threads_hpubench": sorted({str(h.get("torch_threads")) for h in hp}),
        "torch_threads_bare": sorted({str(b.get("torch_threads")) for b in bare}),
        "errors": errors,
        "per_round": {"hpubench": hp, "bare": bare},
    }


def measure_throughput(
    launcher: Any,
    plan: list[tuple[str, int]],
    rounds: int,
    tmp: Path,
    device: str,
    warmup_s: float,
    measure_s: float | None,
) -> list[dict]:
    import workloads
    from hpubench.plan.cell import Cell

    out = []
    for name, plan_steps in plan:
        bs = workloads.get(name).sizes["tiny"].batch_size
        # One bare run prices a step on this device, so both sides warm up for warmup_s (and measure for
        # measure_s, when given) with the same step counts.
        step_s = calibrate_step_s(name, bs, device)
        warmup = warmup_plan(step_s, warmup_s)
        steps = plan_steps if measure_s is None else max(plan_steps, math.ceil(measure_s / step_s))
        cell = Cell(name, "tiny", device, warmup_steps=warmup, steps=steps)
        print(f"  {name}: {rounds} rounds of {warmup} warm-up + {steps} steps ", end="", flush=True)
        hp, bare = ab_rounds(launcher, cell, bs, rounds, tmp, device)
        out.append(
            {
                "workload": name,
                "size": "tiny",
                "batch_size": bs,
                "steps": steps,
                "device": device,
                "warmup_steps": warmup,
                "calibrated_step_s": step_s,
                "rounds": rounds,
                **compare_sides(hp, bare),
            }
        )
    return out


# ---- main ----------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The command line, kept apart so that ``main`` reads as the run's steps."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, steps and cells (~1 minute)")
    parser.add_argument("--json", metavar="PATH", help="also write every figure to this JSON file")
    parser.add_argument(
        "--rounds", type=int, metavar="N", help="A/B rounds per workload (default 5; 2 with --quick)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="set OMP_NUM_THREADS=N for both sides (default: both follow hpubench's CPU thread policy, "
        "HPUBENCH_CPU_THREADS)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        metavar="NAME",
        help="accelerator both sides run on (cpu, cuda, hpu, or a plugin's; default cpu); device 0",
    )
    parser.add_argument(
        "--warmup-s",
        type=float,
        default=WARMUP_S,
        metavar="S",
        help=f"warm-up of both sides in seconds, turned into steps per workload (default {WARMUP_S:g}: "
        "--steps auto's minimum)",
    )
    parser.add_argument(
        "--measure-s",
        type=float,
        metavar="S",
        help="measure at least this many seconds a side (default: the plan's fixed step counts)",
    )
    parser.add_argument(
        "--workloads",
        metavar="A,B",
        help="throughput comparison for these tiny workloads only (default: the plan's)",
    )
    parser.add_argument(
        "--throughput-only", action="store_true", help="skip the fixed-cost, naive and spawn parts"
    )
    return parser


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse bad options before anything is measured, and set OMP_NUM_THREADS before torch is imported."""
    if args.device not in accelerators.names():
        known = ", ".join(accelerators.names())
        parser.error(f"--device {args.device!r} is not a registered accelerator; one of {known}")
    if not (math.isfinite(args.warmup_s) and args.warmup_s >= 0):
        parser.error(f"--warmup-s must be seconds >= 0, got {args.warmup_s:g}")
    if args.measure_s is not None and not (math.isfinite(args.measure_s) and args.measure_s > 0):
        parser.error(f"--measure-s must be seconds > 0, got {args.measure_s:g}")
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be >= 1")
    problem = json_out_problem(args.json)
    if problem:
        parser.error(problem)
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be >= 1")
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch is imported anywhere


def run_parts(
    parser: argparse.ArgumentParser, args: argparse.Namespace, mode: str, plan: list[tuple[str, int]]
) -> dict[str, Any]:
    """Every measurement, in one launcher and one scratch folder that is removed whatever happens."""
    from hpubench.run.launch import Launcher

    tmp = Path(tempfile.mkdtemp(prefix="hpubench-overhead-"))
    try:
        with Launcher(isolation="fork") as launcher:
            inventory, _ = launcher.detect()  # starts the zygote, as `hpubench run` does
            if inventory.count(args.device) < 1:
                parser.error(f"--device {args.device}: no such device on this machine; try --device cpu")
            print("  bookkeeping micro-costs", flush=True)
            bookkeeping = _in_fork(bookkeeping_costs)
            rounds = args.rounds or ROUNDS[mode]
            throughput = measure_throughput(
                launcher, plan, rounds, tmp, args.device, args.warmup_s, args.measure_s
            )
            fixed = (
                None
                if args.throughput_only
                else measure_fixed_cost(launcher, FIXED_CELLS[mode], tmp, args.device)
            )
            zygote_start_s = list(launcher.zygote_start_s)
        naive = None if args.throughput_only else measure_naive(NAIVE_REPEATS[mode])
        spawn = None if args.throughput_only else measure_spawn(SPAWN_CELLS[mode], tmp, args.device)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "bookkeeping": bookkeeping,
        "throughput": throughput,
        "zygote_start_s": zygote_start_s,
        "fixed_cost": fixed,
        "naive": naive,
        "spawn": spawn,
    }


def environment(
    cpu: str, torch_version: str, load_start: list[float] | None, others: float | None, total_s: float
) -> dict[str, Any]:
    """The machine and how busy other work kept it, so the report can say how far to trust the figures."""
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "torch": torch_version,
        "python": platform.python_version(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "loadavg_start": load_start,
        "loadavg_end": _loadavg(),
        "other_processes_cpu_s": others,
        "other_processes_cores": None if others is None else others / total_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)

    t_start = time.perf_counter()
    mode = "quick" if args.quick else "full"
    load_start = _loadavg()
    busy_start, own_start = _host_busy_s(), _own_cpu_s()

    # Imports only: no torch op may run in this process, or forked children can hang (OpenMP pool).
    import torch
    import torch._dynamo  # optimizers import it; pay it once here, not in every bare child
    from workloadarg import parse_workloads  # imports workloads, hence torch: after OMP_NUM_THREADS is set

    import workloads  # noqa: F401  (registers the workloads the cells run)
    from hpubench.accelerators.cpu import cpu_model_name

    plan = THROUGHPUT_PLAN[mode]
    if args.workloads:
        default_steps = dict(THROUGHPUT_PLAN["full"])
        names, problem = parse_workloads(args.workloads)
        if problem:
            parser.error(f"--workloads: {problem}")
        plan = [(w, default_steps.get(w, 40)) for w in names]

    print(f"hpubench overhead benchmark, {mode} run on {args.device}: measuring ...", flush=True)
    host: dict[str, dict[str, Any]] = {}
    hostspeed.take(host, "before", None)
    parts = run_parts(parser, args, mode, plan)
    hostspeed.take(host, "after", None)

    total_s = time.perf_counter() - t_start
    busy_end = _host_busy_s()
    others = None
    if busy_start is not None and busy_end is not None:
        # Whatever the machine was busy with that this benchmark's own process tree did not use.
        others = max(0.0, (busy_end - busy_start) - (_own_cpu_s() - own_start))
    res = {
        "mode": mode,
        "device": args.device,
        "warmup_s": args.warmup_s,
        "total_s": total_s,
        "environment": environment(cpu_model_name(), torch.__version__, load_start, others, total_s),
        **parts,
        "host_speed": host,
    }
    print_report(res)
    print(hostspeed.lines(host))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res, indent=2, default=str) + "\n")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
