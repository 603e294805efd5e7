"""The CUDA paths, each run once on this machine's GPUs: ``make gpu-check``.

Runs ``benchmarks/gpu-check.toml`` through the CLI as a user would (one and all GPUs with nccl,
32-true / bf16-mixed / 16-mixed, eager / compile, CUDA graphs on and off; tiny sizes, short adaptive
steps, NVML telemetry on), then ``hpubench profile`` on one CUDA cell, and prints one table: every cell's
status, quality verdict, samples/s, compiles in the measured window, telemetry source and energy per
sample, and the profile's activities. Exit 0 when every cell that could run ran, 1 when one failed, 2 when
this machine has no CUDA device (nothing is verified then, and the script says so).

``python benchmarks/gpu_check.py [--out DIR]`` (default ``results/gpu-check``; the directory must not
exist yet, so an earlier check is never overwritten).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import hostspeed  # benchmarks/ is on sys.path: this runs as a script

HERE = Path(__file__).resolve().parent
MATRIX = HERE / "gpu-check.toml"
# Asked in a child: this script never imports torch itself (as hpubench's launcher never does).
COUNT_GPUS = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
PROFILE_ARGS = ("-w", "mlp", "--size", "tiny", "-a", "cuda", "--warmup", "1", "--active", "3")


def gpu_count() -> int:
    proc = subprocess.run([sys.executable, "-c", COUNT_GPUS], capture_output=True, text=True)
    try:
        return int(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0


def hpubench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hpubench", *args], capture_output=True, text=True)


def records(run_dir: Path) -> list[dict[str, Any]]:
    store = run_dir / "cells.jsonl"
    return [json.loads(line) for line in store.read_text().splitlines()] if store.exists() else []


def _f(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def clock_of(timing: str | None) -> str:
    """The record's step clock in a word: ``events``, ``stamps`` (host timestamps, launch-bound) or
    ``sync`` (the host clock)."""
    if not timing:
        return "-"
    if timing.startswith("device timing events"):
        return "events"
    return "stamps" if timing.startswith("host timestamps") else "sync"


def row(rec: dict[str, Any]) -> str:
    m = rec.get("metrics") or {}
    tel = rec.get("telemetry") or {}
    rt = rec.get("runtime") or {}
    energy = tel.get("energy_per_sample_j")
    source = tel.get("source") or f"none ({tel.get('absent_reason') or 'not sampled'})"
    return (
        f"{rec['cell']['workload']:<5}{rec['cell']['devices']!s:>3} {rec['cell']['precision']:<11}"
        f"{rec['cell']['mode']:<8}{'on' if rec['cell']['graphs'] else 'off':<6}{rec['status']:<8}"
        f"{rec.get('quality') or '-':<11}{_f(m.get('samples_per_s'), ',.0f'):>12}"
        f"{rt.get('compiles_measured', '-')!s:>9}  {clock_of(rt.get('timing')):<7}{source:<9}"
        f"{_f(energy, '.3g'):>10}  "
        f"{rec.get('reason') or ''}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("results/gpu-check"))
    args = ap.parse_args(argv)
    if args.out.exists():
        print(f"gpu-check: {args.out} exists; give a new --out (an earlier check is never overwritten)")
        return 2
    gpus = gpu_count()
    if gpus == 0:
        print(
            "gpu-check: no CUDA device on this machine: nothing was verified. "
            "Run `make gpu-check` where torch.cuda.is_available() is True."
        )
        return 2
    t0 = time.monotonic()
    print(f"gpu-check: {gpus} GPU(s); running {MATRIX.name} -> {args.out}", flush=True)
    # A launch-bound CUDA step runs at the host CPU's speed: a host that swings makes cells unstable.
    print(hostspeed.line("before", hostspeed.measure()), flush=True)
    run = hpubench("run", "--matrix", str(MATRIX), "-o", str(args.out))
    print(hostspeed.line("after the run", hostspeed.measure()), flush=True)
    recs = records(args.out)
    prof = hpubench("profile", *PROFILE_ARGS, "--out", str(args.out / "profile"))
    wall = time.monotonic() - t0
    head = f"{'wl':<5}{'dev':>3} {'precision':<11}{'mode':<8}{'graph':<6}{'status':<8}{'quality':<11}"
    print(f"\n{head}{'samples/s':>12}{'compiles':>9}  {'clock':<7}{'telemetry':<9}{'J/sample':>10}  reason")
    for rec in recs:
        print(row(rec))
    prof_tail = (prof.stdout.strip() or prof.stderr.strip()).splitlines()[-1:]
    print(f"\nprofile (mlp tiny, cuda): exit {prof.returncode}: {' '.join(' '.join(prof_tail).split())}")
    failed = [r for r in recs if r["status"] == "failed"]
    ran = [r for r in recs if r["status"] == "ok"]
    print(
        f"gpu-check: {len(ran)} ok, {len(failed)} failed, {len(recs) - len(ran) - len(failed)} skipped "
        f"in {wall:.0f} s (run exit {run.returncode}); records in {args.out}"
    )
    if not recs:
        print(f"gpu-check: the run wrote no record: {(run.stderr.strip().splitlines() or [''])[-1]}")
        return 1
    return 1 if failed or prof.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
