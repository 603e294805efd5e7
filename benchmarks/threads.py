"""Which CPU thread policy to default to: throughput of each, quiet and beside a busy neighbour.

Run with ``python benchmarks/threads.py [--rounds N] [--workloads mlp,gpt] [--json PATH]``. It prints
figures and asserts nothing; it is not part of the test suite. CPU only.

For each workload (tiny size, 32-true, eager) and each policy of ``HPUBENCH_CPU_THREADS`` (all: torch's
default, one thread per core; all-passive: the same with OMP_WAIT_POLICY=PASSIVE; cores-1; pinned:
cores-1 threads with the affinity limited to them), one real cell runs through the CLI as a user runs it
(``python -m hpubench run ... --out TMP``: pre-warmed fork server, fresh store), once quiet and once with
a neighbour beside it: ``python -c "while True: pass"``, unpinned, started before the run and killed
after it. The (policy, quiet|busy) combinations are shuffled within each round so drift on a shared
machine spreads over all of them. Reported per workload: median samples/s of each combination (the
record's figure: batch x steps over the sum of individually timed steps), busy/quiet, the median
``interference`` the cell recorded (the share of its CPUs' time other processes took while it measured)
and the median 1-minute load average at the cell's start (``runtime["threads"]["load_avg_start"]``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from clicell import tiny_cell  # benchmarks/ is on sys.path: these run as scripts
from outpath import json_out_problem

POLICIES = ("all", "all-passive", "cores-1", "pinned")
STEPS = {"mlp": 200, "gpt": 20, "resnet": 10}
WARMUP = 5
HOG = "while True: pass"


def run_cell(workload: str, policy: str, busy: bool) -> dict[str, Any]:
    """One cell through the CLI under ``policy``; the record's figures and conditions."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    env["HPUBENCH_CPU_THREADS"] = policy
    hog = subprocess.Popen([sys.executable, "-c", HOG]) if busy else None
    try:
        rec = tiny_cell(workload, STEPS[workload], WARMUP, env, "threads")
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    if "error" in rec:
        return rec
    rt = rec["runtime"]
    return {
        "samples_per_s": rec["metrics"]["samples_per_s"],
        "interference": rt.get("interference"),
        "load_avg_start": rt["threads"]["load_avg_start"],
        "threads": rt["threads"],
    }


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workloads", default="mlp,gpt")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    problem = json_out_problem(args.json)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    workloads = args.workloads.split(",")
    policies = args.policies.split(",")
    rng = random.Random(0)
    results: dict[tuple[str, str, bool], list[dict[str, Any]]] = {}
    for r in range(args.rounds):
        combos = [(w, p, b) for w in workloads for p in policies for b in (False, True)]
        rng.shuffle(combos)
        for w, p, b in combos:
            res = run_cell(w, p, b)
            results.setdefault((w, p, b), []).append(res)
            sps = _fmt(res.get("samples_per_s"), ",.0f")
            print(f"round {r + 1}: {w} {p:<11} {'busy' if b else 'quiet'}: {sps} samples/s "
                  f"interference {_fmt(res.get('interference'), '.2f')} {res.get('error') or ''}",
                  file=sys.stderr, flush=True)  # fmt: skip
    cores = len(os.sched_getaffinity(0))
    print(f"\nCPU thread policies on {cores} CPUs, {args.rounds} interleaved rounds, median per cell")
    print("samples/s from each record; interference: other processes' share of the cell's CPU time")
    for w in workloads:
        print(f"\n{w} tiny ({STEPS[w]} steps)")
        head = f"{'policy':<12} {'threads':>7} {'quiet':>10} {'busy':>10} {'busy/quiet':>10}"
        print(f"{head} {'intf quiet':>10} {'intf busy':>10} {'load q/b':>10}")
        for p in policies:
            q, b = results.get((w, p, False), []), results.get((w, p, True), [])
            qs, bs = _median(q, "samples_per_s"), _median(b, "samples_per_s")
            threads = next((x["threads"]["intra_op"] for x in q if "threads" in x), None)
            ratio = bs / qs if qs and bs else None
            iq, ib = _median(q, "interference"), _median(b, "interference")
            lq, lb = _median(q, "load_avg_start"), _median(b, "load_avg_start")
            print(f"{p:<12} {threads!s:>7} {_fmt(qs, ',.0f'):>10} {_fmt(bs, ',.0f'):>10} "
                  f"{_fmt(ratio, '.3f'):>10} {_fmt(iq, '.2f'):>10} {_fmt(ib, '.2f'):>10} "
                  f"{_fmt(lq, '.1f'):>4}/{_fmt(lb, '.1f'):<5}")  # fmt: skip
    if args.json:
        rows = [{"workload": w, "policy": p, "busy": b, "runs": v} for (w, p, b), v in results.items()]
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
