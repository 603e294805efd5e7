"""Can one cell's figure be trusted on this machine? Run-to-run spread, and the collapse guard.

Run with ``make bench`` (after ``overhead.py``) or
``python benchmarks/trust.py [--quick] [--repeats N] [--json PATH]``. It prints figures and a verdict per
check; it never asserts on timings and is not part of the test suite. CPU only. Every cell runs through the
CLI as a user runs it (``python -m hpubench run ... -o TMP``: pre-warmed fork server, fresh store, the
default CPU thread policy unless a check says otherwise), tiny size, 32-true, eager.

1. Repeatability. ``--steps auto --repeat N`` (default 5) for mlp, gpt and resnet in one run, so the
   repeats of the three workloads are interleaved passes as ``hpubench run --repeat`` makes them.
   Reported per workload: the coefficient of variation of samples/s across the repeats (target <= 2% on a
   quiet machine), the steps ``--steps auto`` chose, why it stopped, and each repeat's quality verdict.
   Beside it, the machine's own floor: the bare loop (``bareloop.py``) doing the same work (the median
   warm-up and measured steps the repeats chose) in as many fresh processes, interleaved across the
   workloads; its CV is the run-to-run spread of this machine with no harness at all. hpubench's CV near
   the floor means the harness adds no spread of its own, whatever the floor is.
   The host's own steadiness (``benchmarks/hostspeed.py``, doctor's host speed line) is printed before and
   after: the 2% target is for a host that reads steady.

2. Collapse guard. The same cell, quiet and then with a CPU hog beside it (``python -c "while True:
   pass"``, started before the run and killed after it), under the default thread policy (cores-1) and
   under ``all`` (torch's one thread per core, the policy that collapses 40-100x beside a hog). The guard
   holds when no cell run beside the hog comes out ``ok``: each must be ``interfered`` or ``noisy``,
   whatever its throughput did. Reported: samples/s, busy/quiet, the recorded interference and the
   verdict with its first reason.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import hostspeed  # benchmarks/ is on sys.path: these run as scripts
from outpath import json_out_problem

ROOT = Path(__file__).resolve().parent.parent
HOG = "while True: pass"
CV_TARGET = 0.02
REPEATABILITY = {"full": ("mlp", "gpt", "resnet"), "quick": ("mlp", "gpt")}
GUARD = {"full": ("mlp", "gpt"), "quick": ("mlp",)}
GUARD_POLICIES = ("cores-1", "all")
CELL_ARGS = ("--size", "tiny", "-a", "cpu", "--precision", "32-true", "--mode", "eager", "--no-telemetry")


def _env(policy: str | None) -> dict[str, str]:
    """This environment without a user's thread settings, so hpubench's policy decides."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    env.pop("HPUBENCH_CPU_THREADS", None)
    if policy is not None:
        env["HPUBENCH_CPU_THREADS"] = policy
    return env


def run_cli(workloads: tuple[str, ...], extra: list[str], policy: str | None, busy: bool) -> list[dict]:
    """Records of one ``hpubench run`` (empty when it wrote none); a hog runs beside it when ``busy``."""
    hog = subprocess.Popen([sys.executable, "-c", HOG]) if busy else None
    try:
        with tempfile.TemporaryDirectory(prefix="hpubench-trust-") as tmp:
            args = [sys.executable, "-m", "hpubench", "run", "-w", ",".join(workloads), *CELL_ARGS, *extra]
            proc = subprocess.run([*args, "-o", tmp], env=_env(policy), capture_output=True, text=True)
            store = Path(tmp) / "cells.jsonl"
            lines = store.read_text().splitlines() if store.exists() else []
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    if not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        raise SystemExit(f"hpubench run wrote no record (exit {proc.returncode}): {tail}")
    return [json.loads(line) for line in lines]


def bare_floor(rows: list[dict[str, Any]], repeats: int) -> None:
    """Add to each repeatability row the bare loop's samples/s over ``repeats`` fresh processes."""
    script = Path(__file__).with_name("bareloop.py")
    env = {
        **_env(None),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    for r in rows:
        r["bare_samples_per_s"] = []
    for _ in range(repeats):
        for r in rows:
            if not r["steps"]:
                continue
            args = [r["workload"], "tiny", r["batch_size"], statistics.median_low(r["warmup"])]
            args = [str(a) for a in [*args, statistics.median_low(r["steps"])]]
            proc = subprocess.run(
                [sys.executable, str(script), *args], env=env, capture_output=True, text=True
            )
            if proc.returncode != 0:
                raise SystemExit(f"bare loop failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
            r["bare_samples_per_s"].append(json.loads(proc.stdout)["samples_per_s"])
    for r in rows:
        b = r["bare_samples_per_s"]
        r["bare_cv"] = statistics.stdev(b) / statistics.mean(b) if len(b) > 1 else None
        r["inproc_cv"] = None
        if r["steps"]:  # the same blocks one after another in one process: drift without a process's draw
            args = [r["workload"], "tiny", r["batch_size"], statistics.median_low(r["warmup"])]
            args = [str(a) for a in [*args, statistics.median_low(r["steps"]), repeats]]
            proc = subprocess.run(
                [sys.executable, str(script), *args], env=env, capture_output=True, text=True
            )
            if proc.returncode != 0:
                raise SystemExit(f"bare loop failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
            blocks = json.loads(proc.stdout)["blocks_samples_per_s"]
            r["inproc_samples_per_s"] = blocks
            r["inproc_cv"] = statistics.stdev(blocks) / statistics.mean(blocks)


def _sps(rec: dict[str, Any]) -> float | None:
    return (rec.get("metrics") or {}).get("samples_per_s")


def repeatability(workloads: tuple[str, ...], repeats: int, extra: list[str]) -> list[dict[str, Any]]:
    recs = run_cli(workloads, ["--steps", "auto", "--repeat", str(repeats), *extra], None, busy=False)
    rows = []
    for w in workloads:
        mine = [r for r in recs if r["cell"]["workload"] == w and r["status"] == "ok"]
        sps = [s for s in map(_sps, mine) if s]
        cv = statistics.stdev(sps) / statistics.mean(sps) if len(sps) > 1 else None
        rows.append(
            {
                "workload": w,
                "runs": len(sps),
                "samples_per_s": sps,
                "cv": cv,
                "steps": [r["metrics"]["measured_steps"] for r in mine],
                "warmup": [r["metrics"]["warmup_steps"] for r in mine],
                "batch_size": mine[0]["runtime"]["batch_size"] if mine else None,
                "stop": sorted({r["runtime"].get("steps_stop", "") for r in mine}),
                "quality": [r.get("quality") for r in mine],
                "threads": mine[0]["runtime"]["threads"]["intra_op"] if mine else None,
            }
        )
    return rows


def collapse_guard(workloads: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = []
    for policy in GUARD_POLICIES:
        for w in workloads:
            side = {}
            for busy in (False, True):
                (rec,) = run_cli((w,), ["--steps", "auto"], policy, busy)
                reasons = rec.get("quality_reasons") or []
                side["busy" if busy else "quiet"] = {
                    "samples_per_s": _sps(rec),
                    "quality": rec.get("quality"),
                    "reason": reasons[0] if reasons else "",
                    "interference": rec["runtime"].get("interference"),
                    "threads": rec["runtime"]["threads"]["intra_op"],
                }
            rows.append({"workload": w, "policy": policy, **side})
    return rows


def _f(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def print_report(rep: list[dict[str, Any]], guard: list[dict[str, Any]], repeats: int) -> None:
    """Print both checks, each with whether its target held (figures, not a test: the exit code is 0)."""
    print(f"\n1. Repeatability: one cell, --steps auto, {repeats} interleaved repeats (target CV <= 2%)")
    head = f"   {'workload':<9}{'thr':>4}{'median samples/s':>18}{'CV':>8}{'bare CV':>9}{'1-proc CV':>11}"
    print(f"{head}  {'steps':<12}quality")
    ok_rep = True
    for r in rep:
        med = statistics.median(r["samples_per_s"]) if r["samples_per_s"] else None
        held = r["cv"] is not None and r["cv"] <= CV_TARGET
        ok_rep &= held
        steps = f"{min(r['steps'])}-{max(r['steps'])}" if r["steps"] else "-"
        qual = ",".join(str(q) for q in r["quality"])
        cv = _f(r["cv"] * 100 if r["cv"] is not None else None, ".2f") + "%"
        bare = _f(r["bare_cv"] * 100 if r.get("bare_cv") is not None else None, ".2f") + "%"
        one = _f(r["inproc_cv"] * 100 if r.get("inproc_cv") is not None else None, ".2f") + "%"
        row = f"   {r['workload']:<9}{r['threads']!s:>4}{_f(med, ',.1f'):>18}{cv:>8}{bare:>9}{one:>11}"
        print(f"{row}  {steps:<12}{qual}")
        print(f"   {'':<9}stopped: {'; '.join(r['stop'])}")
    print(f"   -> {'holds' if ok_rep else 'NOT met'}: every CV <= {CV_TARGET:.0%}")
    for line in (
        "(bare CV: the same work as a bare loop in fresh processes, this machine's own run-to-run floor;",
        " 1-proc CV: the same blocks one after another in one process, the floor without a new process's",
        " draw: where it is far below bare CV, each process runs at its own speed and only repeats in",
        " several processes average that out)",
    ):
        print(f"   {line}")
    if not guard:
        print("\n2. Collapse guard: skipped (--no-guard)")
        return
    print("\n2. Collapse guard: the same cell quiet and beside a CPU hog (python -c 'while True: pass')")
    head = f"   {'workload':<9}{'policy':<9}{'thr':>4}{'quiet s/s':>12}{'busy s/s':>12}{'busy/quiet':>11}"
    print(f"{head}{'intf q/b':>12}  quality quiet -> busy")
    ok_guard = True
    for g in guard:
        q, b = g["quiet"], g["busy"]
        ratio = b["samples_per_s"] / q["samples_per_s"] if q["samples_per_s"] and b["samples_per_s"] else None
        ok_guard &= b["quality"] in ("interfered", "noisy")
        intf = f"{_f(q['interference'], '.2f')}/{_f(b['interference'], '.2f')}"
        print(
            f"   {g['workload']:<9}{g['policy']:<9}{q['threads']!s:>4}{_f(q['samples_per_s'], ',.0f'):>12}"
            f"{_f(b['samples_per_s'], ',.0f'):>12}{_f(ratio, '.3f'):>11}{intf:>12}  "
            f"{q['quality']} -> {b['quality']}"
        )
        if b["reason"]:
            print(f"   {'':<9}busy: {b['reason']}")
    print(f"   -> {'holds' if ok_guard else 'BROKEN'}: no cell beside the hog came out ok")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer workloads (mlp, gpt; guard: mlp)")
    ap.add_argument("--repeats", type=int, default=5, help="repeats for the repeatability check (default 5)")
    ap.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    ap.add_argument("--min-time", help="pass --min-time to the repeatability runs (default: hpubench's)")
    ap.add_argument(
        "--workloads", help="comma-separated subset of the workloads to check (default: all of the mode's)"
    )
    ap.add_argument("--no-guard", action="store_true", help="skip the collapse guard")
    args = ap.parse_args(argv)
    if args.repeats < 2:
        ap.error("--repeats must be >= 2 (a spread needs two runs)")
    problem = json_out_problem(args.json)
    if problem:
        ap.error(problem)
    mode = "quick" if args.quick else "full"
    load = os.getloadavg()[0]
    print(f"hpubench trust benchmark ({mode}): {os.cpu_count()} CPUs, load {load:.2f}", flush=True)
    extra = ["--min-time", args.min_time] if args.min_time else []
    chosen = REPEATABILITY[mode]
    if args.workloads:
        chosen = tuple(w for w in args.workloads.split(",") if w)
        unknown = sorted(set(chosen) - set(REPEATABILITY["full"]))
        if unknown:
            ap.error(f"--workloads: {', '.join(unknown)} not among {', '.join(REPEATABILITY['full'])}")
    host: dict[str, dict[str, Any]] = {}
    hostspeed.take(host, "before")
    rep = repeatability(chosen, args.repeats, extra)
    hostspeed.take(host, "after repeatability")
    bare_floor(rep, args.repeats)
    guard = [] if args.no_guard else collapse_guard(tuple(w for w in GUARD[mode] if w in chosen))
    print_report(rep, guard, args.repeats)
    if args.json:
        args.json.write_text(
            json.dumps({"repeatability": rep, "collapse_guard": guard, "host_speed": host}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
