"""What timing each step costs: a plain loop against hpubench's measuring loop with each step clock.

``python benchmarks/clock_cost.py [--device cuda] [--workloads mlp,gpt,resnet] [--rounds 30] [--json PATH]``

One process, so no process's own speed draw enters (pairs of separate processes cannot show a few percent
on a noisy host). The cell's training step (``bareloop.build_training``: same model, seed, batches,
optimizer) runs in blocks of ~0.25 s, three ways per round, the order rotated each round:
- ``plain``: the step looped, the device synchronised only at the block's ends (a user's own loop);
- ``host``: ``measure_steps`` with the host clock (a sync and a loss read after every step);
- ``device``: ``measure_steps`` with the device's own clock (``Accelerator.step_clock``; on CUDA one timing
  event a step, read in batches, or host timestamps where the block's warm-up found the step launch-bound;
  the choices are printed; on a device without events, the host clock again).
With ``--variants`` (CUDA), three loops that each add one kind of per-step work to ``measure_steps``, every
step read at the block's end: ``event`` (one timing event a step, the loss held), ``copy`` (the loss copied
on the device, host timestamps) and ``none`` (host timestamps, the loss held): what each costs a
launch-bound step, which is how the CUDA clock's per-step work was chosen.
For each side but ``plain`` it prints, against ``plain`` in the same round (median of rounds,
distribution-free interval): ``reported``, the figure a record would give (steps over the sum of their
step times), and ``wall``, how fast the loop really ran. Not part of ``make bench``: on the CPU both
clocks are the host clock.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import hostspeed  # benchmarks/ is on sys.path: these run as scripts
from bareloop import build_training
from outpath import json_out_problem
from workloadarg import parse_workloads

import workloads
from hpubench import accelerators
from hpubench.analysis.stats.medianci import median_interval
from hpubench.measure.steps import measure_steps

BLOCK_S = 0.25
WARMUP_S = 2.0
WARMUP_STEPS = 3  # each block's own, from whose later half the device's clock chooses its method


class Variant:
    """A step clock doing one kind of per-step work (module docstring, ``--variants``); every step is read
    at the block's end, after one sync, so the cost seen is the per-step work's alone."""

    method = "variant"

    def __init__(self, event: bool, copy: bool) -> None:
        import torch

        self.event, self.copy = event, copy
        self.events: list[Any] = []
        self.stamps: list[float] = []
        self.losses: list[Any] = []
        self.new_event = lambda: torch.cuda.Event(enable_timing=True)

    def warmed(self, launch_s: Any, step_s: Any) -> None:
        """Each variant is one fixed kind of per-step work: nothing to choose."""

    def begin(self) -> None:
        if not self.stamps:
            self.stamps.append(time.perf_counter())
            if self.event:
                self.events.append(self.new_event())
                self.events[-1].record()

    def end(self, loss: Any) -> None:
        import torch

        if self.event:
            self.events.append(self.new_event())
            self.events[-1].record()
        if self.copy:
            with torch.no_grad():
                self.losses.append(loss.clone())
        else:
            self.losses.append(loss.detach())
        self.stamps.append(time.perf_counter())

    def ready(self) -> list[tuple[float, float]]:
        return []

    def finish(self) -> list[tuple[float, float]]:
        import torch

        torch.cuda.synchronize()
        self.stamps[-1] = time.perf_counter()
        if self.event:
            times = [a.elapsed_time(b) / 1e3 for a, b in zip(self.events, self.events[1:], strict=False)]
        else:
            times = [b - a for a, b in zip(self.stamps, self.stamps[1:], strict=False)]
        return list(zip(times, torch.stack(self.losses).tolist(), strict=True))


def measure_workload(name: str, device: str, rounds: int, variants: bool = False) -> dict[str, Any]:
    batch_size = workloads.get(name).sizes["tiny"].batch_size
    step, batches, sync = build_training(name, "tiny", batch_size, device)
    acc = accelerators.get(device)(0)
    n = len(batches)

    def plain(k: int) -> float:
        sync()
        t0 = time.perf_counter()
        for i in range(k):
            step(batches[i % n])
        sync()
        return time.perf_counter() - t0

    t_end = time.perf_counter() + WARMUP_S
    while time.perf_counter() < t_end:
        plain(20)
    k = max(20, round(BLOCK_S / (plain(100) / 100)))

    chosen: set[str] = set()  # what the device's clock chose from each block's warm-up

    def harness(clock: Any) -> tuple[float, float]:
        edges: list[float] = []  # the measured window's wall clock: synchronised at both ends

        def edge() -> None:
            sync()
            edges.append(time.perf_counter())

        out = measure_steps(
            step, batches, sync, WARMUP_STEPS, k, clock=clock, on_measured_start=edge, on_measured_end=edge
        )
        return sum(out.measured_s), (edges[1] - edges[0]) / k

    def device() -> tuple[float, float]:
        clock = acc.step_clock()
        got = harness(clock)
        chosen.add(clock.method)
        return got

    sides: dict[str, Callable[[], Any]] = {
        "plain": lambda: plain(k),
        "host": lambda: harness(None),
        "device": device,
    }
    if variants:
        sides["event"] = lambda: harness(Variant(event=True, copy=False))
        sides["copy"] = lambda: harness(Variant(event=False, copy=True))
        sides["none"] = lambda: harness(Variant(event=False, copy=False))
    names = list(sides)
    ratios: dict[str, list[float]] = {f"{s}_{m}": [] for s in names[1:] for m in ("reported", "wall")}
    for rnd in range(rounds):
        shift = rnd % len(names)  # the order rotates, so no side always runs first
        got = {side: sides[side]() for side in names[shift:] + names[:shift]}
        per_step = got["plain"] / k
        for side in names[1:]:
            reported, wall_per_step = got[side]
            ratios[f"{side}_reported"].append(got["plain"] / reported)
            ratios[f"{side}_wall"].append(per_step / wall_per_step)
    return {
        "workload": f"{name} tiny",
        "steps_per_block": k,
        "clock": sorted(chosen),
        "intervals": {key: vars(median_interval(v)) for key, v in ratios.items()},
        "ratios": ratios,
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="accelerator name (cuda, hpu, cpu)")
    ap.add_argument("--workloads", default="mlp,gpt,resnet", help="comma-separated, size tiny")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--json", default=None)
    ap.add_argument("--variants", action="store_true", help="also the per-step work variants (CUDA)")
    args = ap.parse_args(argv)
    if args.rounds < 6:
        print("--rounds must be >= 6 (fewer cannot give a 95% interval of the median)")
        return 2
    problem = json_out_problem(args.json)
    if problem:
        print(problem)
        return 2
    names, problem = parse_workloads(args.workloads)
    if problem:
        print(problem)
        return 2
    if args.device not in accelerators.names():
        known = ", ".join(accelerators.names())
        print(f"--device {args.device!r} is not a registered accelerator; one of {known}")
        return 2
    if not accelerators.get(args.device).is_available():
        print(f"no {args.device} device on this machine: nothing measured")
        return 2
    print(f"clock cost on {args.device}: {args.rounds} rounds, sides rotated; ratios to 'plain', same round")
    host: dict[str, dict[str, Any]] = {}
    hostspeed.take(host, "before")
    results = []
    for name in names:
        res = measure_workload(name, args.device, args.rounds, args.variants and args.device == "cuda")
        results.append(res)
        cells = "  ".join(
            f"{key} {iv['median']:.4f} [{iv['low']:.4f}-{iv['high']:.4f}]"
            for key, iv in res["intervals"].items()
        )
        print(f"{res['workload']} ({res['steps_per_block']} steps a block): {cells}", flush=True)
    hostspeed.take(host, "after")
    for res in results:
        print(f"{res['workload']}: device clock chose {' | '.join(res['clock'])}")
    if args.json is not None:
        with open(args.json, "w") as f:
            json.dump(
                {"device": args.device, "rounds": args.rounds, "results": results, "host_speed": host}, f
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
