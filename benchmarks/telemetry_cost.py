"""What the telemetry sampler costs the steps it watches, measured inside one process.

Run with ``python benchmarks/telemetry_cost.py [--device cuda] [--workloads mlp,gpt] [--rounds 60]
[--block-s 0.25] [--interval 0.1] [--json PATH]``. It prints figures and never asserts on timings; it is not
part of the test suite. Exit 2 where the device or its telemetry source is missing (nothing measured).

Why one process: every process runs at a speed of its own (README, "Benchmarks": resnet tiny 0.7-1.3% CV
across blocks in one process, 2.1-4.1% across processes), so pairs of runs with and without telemetry
spread by more than the effect sought (71k-93k samples/s over 10 pairs on an H100). Here one process
builds the cell's training step (``bareloop.build_training``: same model, seed, batches and optimizer)
and alternates blocks of about ``--block-s`` seconds under three arms, in a rotated order each round:

- ``off``: no sampler;
- ``full``: hpubench's sampler with full readings every ``--interval`` only (the energy-only polls off);
- ``default``: the sampler as a cell runs it (full readings every ``--interval`` and, where the source
  declares ``energy_poll_s``, the energy counter alone in between: NVML every 0.02 s, as far as the
  sampler's CPU budget allows, ``hpubench.measure.telemetry.sampler.ENERGY_POLL_CPU_BUDGET``).

Each block is timed by the cell's own loop (``measure_steps``, one untimed step first): ``perf_counter``
around each step with the device synchronised after it, the loss read to the host after the clock stops;
throughput = batch x steps over the sum of the step times. Reported per arm against ``off`` in the same
round: the median ratio with its 95% distribution-free interval (1.000 = no cost), the polls per second
and the sampler thread's own CPU time as a share of a core (``Sampler.cpu_share_pct``, what a cell
records as ``sampler_cpu_pct``): its reads hold the GIL for their Python part only, so that share is
about the most the steps can lose, and it stays readable where the throughput ratio is lost in the
host's noise. Before the rounds, one full and one energy-only reading are timed on the main thread (CPU
and wall microseconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bareloop import build_training  # benchmarks/ is on sys.path: these run as scripts
from outpath import json_out_problem
from workloadarg import parse_workloads

import workloads
from hpubench import accelerators
from hpubench.analysis.stats.medianci import median_interval
from hpubench.measure.steps import measure_steps
from hpubench.measure.telemetry import Monitor, Sampler, TelemetrySource
from hpubench.measure.telemetry.readcost import time_reads

ARMS = ("off", "full", "default")
WARMUP_S = 2.0


def run_block(step: Callable[[Any], Any], batches: list[Any], sync: Callable[[], None], steps: int) -> float:
    """Sum of ``steps`` step times as a cell times them (``measure_steps``: one untimed step first, then
    each step bracketed by device syncs, its loss read outside the clock)."""
    return sum(measure_steps(step, batches, sync, 1, steps).measured_s)


def sampler_for(arm: str, source: TelemetrySource, interval_s: float) -> Sampler | None:
    """The arm's sampler, not yet started: none, full readings only, or as a cell runs it."""
    if arm == "off":
        return None
    return Sampler(source, interval_s, energy_polls=arm == "default")


def rotate_arms(
    rounds: int, source: TelemetrySource, interval_s: float, block: Callable[[], tuple[float, float]]
) -> dict[str, dict[str, list[float]]]:
    """``rounds`` rounds of one ``block`` per arm, the order rotated each round.

    ``block()`` returns (work done, seconds it took); kept per arm: rate, polls a second, sampler CPU %.
    """
    rates: dict[str, list[float]] = {a: [] for a in ARMS}
    polls: dict[str, list[float]] = {a: [] for a in ARMS}
    cpu_pct: dict[str, list[float]] = {a: [] for a in ARMS}
    for r in range(rounds):
        for arm in ARMS[r % len(ARMS) :] + ARMS[: r % len(ARMS)]:
            sampler = sampler_for(arm, source, interval_s)
            if sampler is not None:
                sampler.start()
            t0 = time.perf_counter()
            work, busy = block()
            wall = time.perf_counter() - t0
            if sampler is not None:
                polls[arm].append(len(sampler.stop()) / wall)
                cpu_pct[arm].append(sampler.cpu_share_pct() or 0.0)
            rates[arm].append(work / busy)
    return {"rates": rates, "polls_per_s": polls, "sampler_cpu_pct": cpu_pct}


def measure_workload(
    name: str, acc: Any, source: TelemetrySource, rounds: int, block_s: float, interval_s: float
) -> dict[str, Any]:
    """The workload's tiny training step under each arm; rates in samples/s."""
    batch_size = workloads.get(name).sizes["tiny"].batch_size
    step, batches, sync = build_training(name, "tiny", batch_size, acc.name)
    t_end = time.perf_counter() + WARMUP_S
    while time.perf_counter() < t_end:
        run_block(step, batches, sync, 10)
    per_step = run_block(step, batches, sync, 50) / 50
    steps = max(20, round(block_s / per_step))

    def block() -> tuple[float, float]:
        return batch_size * steps, run_block(step, batches, sync, steps)

    return {
        "workload": f"{name} tiny",
        "unit": "samples/s",
        "detail": f"{steps} steps a block of ~{steps * per_step:.2f} s, step {per_step * 1e3:.3f} ms",
        **rotate_arms(rounds, source, interval_s, block),
    }


def measure_python_thread(
    source: TelemetrySource, rounds: int, block_s: float, interval_s: float
) -> dict[str, Any]:
    """A pure-Python loop on the main thread under each arm: it never lets go of the GIL by itself, so
    every poll takes it away once; the loss per poll is the hand-over's price on this host."""

    def block() -> tuple[float, float]:
        n = 0
        t0 = time.perf_counter()
        end = t0 + block_s
        while time.perf_counter() < end:
            for _ in range(200):
                pass
            n += 1
        return n, time.perf_counter() - t0

    block()  # warm
    return {
        "workload": "python thread",
        "unit": "loops/s",
        "detail": f"blocks of {block_s:g} s of a pure-Python loop (200 iterations a loop)",
        **rotate_arms(rounds, source, interval_s, block),
    }


def summarise(result: dict[str, Any]) -> list[str]:
    """Lines for one measurement: each arm's median rate, block CV, ratio to ``off`` and sampler cost."""
    rates = result["rates"]
    off = rates["off"]
    lines = [f"{result['workload']}: {result['detail']}"]
    for arm in ARMS:
        xs = rates[arm]
        cv = statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 else float("nan")
        line = f"  {arm:<8} median {statistics.median(xs):>12,.1f} {result['unit']}  block CV {cv:.2%}"
        if arm != "off":
            ratios = [a / b for a, b in zip(xs, off, strict=True)]
            mi = median_interval(ratios)
            pps = statistics.median(result["polls_per_s"][arm])
            cpu = statistics.median(result["sampler_cpu_pct"][arm])
            line += (
                f"  {arm}/off {mi.median:.4f} [{mi.low:.4f}-{mi.high:.4f}] ({mi.coverage:.0%})"
                f"  {pps:.1f} polls/s, sampler thread {cpu:.3f}% of a core"
            )
        lines.append(line)
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="accelerator name (cuda, hpu, cpu)")
    ap.add_argument("--workloads", default="mlp,gpt", help="comma-separated, size tiny")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--block-s", type=float, default=0.25)
    ap.add_argument("--interval", type=float, default=0.1, help="seconds between full readings (run default)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.rounds < 2 or args.block_s <= 0 or args.interval <= 0:
        print("--rounds must be >= 2, --block-s and --interval positive")
        return 2
    problem = json_out_problem(args.json)
    if problem:
        print(problem)
        return 2
    names, problem = parse_workloads(args.workloads)
    if problem:
        print(problem)
        return 2
    try:
        acc_cls = accelerators.get(args.device)
    except KeyError as exc:
        print(f"{exc.args[0] if exc.args else exc}")
        return 2
    if not acc_cls.is_available():
        print(f"no {args.device} device on this machine: nothing measured")
        return 2
    acc = acc_cls(0)
    acc.setup()
    monitor = Monitor(acc.telemetry_source, args.interval)
    if monitor.source is None:
        print(f"no telemetry on this {args.device} device ({monitor.reason}): nothing to measure")
        return 2
    source = monitor.source
    print(
        f"telemetry cost on {args.device} ({source.name}, {source.device or 'device 0'}): full readings "
        f"every {args.interval:g} s, energy-only polls every {source.energy_poll_s or 'n/a'} s in 'default'; "
        f"{args.rounds} rounds, arms rotated; ratios are to 'off' in the same round, median [95% interval]"
    )
    cost = time_reads(source, reads=200)
    print(
        f"one reading on this thread (median of {cost.reads}): full {cost.full_cpu_s * 1e6:.1f} us CPU "
        f"({cost.full_wall_s * 1e6:.1f} us wall), energy-only {cost.energy_cpu_s * 1e6:.1f} us CPU "
        f"({cost.energy_wall_s * 1e6:.1f} us wall)"
    )
    results = [measure_python_thread(source, args.rounds, args.block_s, args.interval)]
    print("\n".join(summarise(results[0])), flush=True)
    for name in names:
        result = measure_workload(name, acc, source, args.rounds, args.block_s, args.interval)
        results.append(result)
        print("\n".join(summarise(result)), flush=True)
    source.close()
    if args.json is not None:
        out = {"device": args.device, "source": source.name, "read_cost": cost.to_dict(), "results": results}
        args.json.write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
