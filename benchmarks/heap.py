"""Which heap policy to default to: each cell's figure, spread and page faults under glibc's own and steady.

Run with ``python benchmarks/heap.py [--rounds N] [--workloads mlp,gpt,resnet] [--json PATH]``. It prints
figures and asserts nothing; it is not part of the test suite. CPU only, on a glibc Linux.

For each workload (tiny size, 32-true, eager) and each policy of ``HPUBENCH_MALLOC`` (system: glibc moves
its thresholds as it likes; steady: both held from the cell's start, ``hpubench.measure.heap``), one real
cell runs through the CLI as a user runs it (``python -m hpubench run ... --out TMP``: pre-warmed fork
server, fresh store). The (workload, policy) pairs are shuffled within each round so drift on a shared
machine spreads over both policies. Reported per workload and policy: the median samples/s of the records,
the coefficient of variation across the rounds' cells (each cell is its own process, so this is the
run-to-run spread a user's ``--repeat`` sees), the lowest and highest cell, and the median minor page
faults a measured step (``runtime["page_faults_measured"]``: the heap regrown after a trim).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from pathlib import Path
from typing import Any

from clicell import tiny_cell  # benchmarks/ is on sys.path: these run as scripts
from outpath import json_out_problem

POLICIES = ("system", "steady")
STEPS = {"mlp": 2000, "gpt": 200, "resnet": 80}  # about 2 s of measured steps each on the dev VM
WARMUP = 20


def run_cell(workload: str, policy: str) -> dict[str, Any]:
    """One cell through the CLI under ``policy``; the record's figure and page faults a measured step."""
    drop = ("HPUBENCH_MALLOC", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["HPUBENCH_MALLOC"] = policy
    rec = tiny_cell(workload, STEPS[workload], WARMUP, env, "heap")
    if "error" in rec:
        return rec
    rt = rec["runtime"]
    faults = rt.get("page_faults_measured", {}).get("minor")
    return {
        "samples_per_s": rec["metrics"]["samples_per_s"],
        "faults_per_step": None if faults is None else faults / rec["metrics"]["measured_steps"],
        "quality": rec.get("quality"),
        "heap": rt.get("heap"),
        "interference": rt.get("interference"),
    }


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def summary(runs: list[dict[str, Any]]) -> dict[str, float | None]:
    """Median, CV (%), lowest and highest samples/s, and median faults a step, over the runs that measured."""
    sps = [r["samples_per_s"] for r in runs if "samples_per_s" in r]
    faults = [r["faults_per_step"] for r in runs if r.get("faults_per_step") is not None]
    if not sps:
        return {"median": None, "cv_pct": None, "low": None, "high": None, "faults": None}
    cv = 100 * statistics.stdev(sps) / statistics.mean(sps) if len(sps) > 1 else None
    return {
        "median": statistics.median(sps),
        "cv_pct": cv,
        "low": min(sps),
        "high": max(sps),
        "faults": statistics.median(faults) if faults else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--workloads", default="mlp,gpt,resnet")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    problem = json_out_problem(args.json)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    workloads = args.workloads.split(",")
    unknown = [w for w in workloads if w not in STEPS]
    if unknown:
        print(f"error: --workloads {','.join(unknown)}: choose from {','.join(STEPS)}", file=sys.stderr)
        return 2
    rng = random.Random(0)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in range(args.rounds):
        pairs = [(w, p) for w in workloads for p in POLICIES]
        rng.shuffle(pairs)
        for w, p in pairs:
            res = run_cell(w, p)
            results.setdefault((w, p), []).append(res)
            print(f"round {r + 1}: {w} {p:<7}: {_fmt(res.get('samples_per_s'), ',.0f')} samples/s, "
                  f"{_fmt(res.get('faults_per_step'), ',.1f')} faults/step {res.get('error') or ''}",
                  file=sys.stderr, flush=True)  # fmt: skip
    print(f"\nHeap policies (HPUBENCH_MALLOC), {args.rounds} interleaved rounds, one cell (process) each")
    print("samples/s from each record; CV across the cells; faults: median minor page faults a measured step")
    for w in workloads:
        print(f"\n{w} tiny ({STEPS[w]} steps)")
        print(f"{'policy':<8} {'median':>10} {'CV %':>6} {'lowest':>10} {'highest':>10} {'faults/step':>11}")
        base = summary(results.get((w, "system"), []))["median"]
        for p in POLICIES:
            s = summary(results.get((w, p), []))
            row = f"{p:<8} {_fmt(s['median'], ',.0f'):>10} {_fmt(s['cv_pct'], '.2f'):>6} "
            row += f"{_fmt(s['low'], ',.0f'):>10} {_fmt(s['high'], ',.0f'):>10} "
            row += f"{_fmt(s['faults'], ',.1f'):>11}"
            print(row)
        steady = summary(results.get((w, "steady"), []))["median"]
        if base and steady:
            print(f"steady/system (medians): {steady / base:.3f}")
    if args.json:
        rows = [{"workload": w, "policy": p, "runs": v} for (w, p), v in results.items()]
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
