"""Does hpubench's figure agree with what a plain training script of the same work gets, under each host
condition? (``make bench``; issue 33.)

For each workload (mlp, gpt, resnet at tiny size; hf:gpt2 tiny where transformers is installed), fp32,
eager, one CPU process, and each condition:

- ``tuned``: hpubench's cell as it runs by default (heap thresholds held by HPUBENCH_MALLOC=steady, threads
  by HPUBENCH_CPU_THREADS=cores-1), beside the plain script given the same settings through the
  environment a user would set (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, OMP_NUM_THREADS);
- ``plain``: hpubench's ``--condition plain`` cell beside the plain script with nothing set.

The plain script (``benchmarks/plainloop.py``) is a fresh process importing nothing of the harness; it
imports pandas beside torch, as a training script importing its own stack does. That matters under plain:
glibc's dynamic heap thresholds rise with the first large block a process frees, and one is the old table of
Python's interned strings once enough modules are imported. A script of these workloads importing torch and
the standard library alone stays just short of that resize; one importing pandas, requests, transformers,
Lightning or its own package passes it, as hpubench's plain cell does, and that is the script the cell's
figure stands for. So under ``plain`` a torch-only script also runs each round, and its ratio is printed
beside: the difference a user with such a script sees (``docs/reference.md``). Each round runs every
contender once, each a process of its own, the order alternating between rounds. The plain script runs twice
each round, the two runs swapping places; the round's plain figure is their geometric mean, and the ratio is
the median over rounds of hpubench's figure over it (1.00: the same figure), which leaves the machine's drift
between rounds out. The median's distribution-free interval (``hpubench.analysis.stats.medianci``) says what
the rounds can tell: a ratio outside 0.98-1.02 whose interval still reaches the band is "not decided" (more
rounds narrow it) rather than outside. The A/A ratio, the plain script's second run over its first, is the
test's own check: its interval should hold 1.00. Each process's minor page faults per measured step say
which heap mode it landed in (``hpubench.analysis.tuning``), so a bimodal condition is shown as such
instead of averaged away. hpubench's own timing verdicts on its cells are counted beside each row: a round
it did not call ``ok`` was disturbed while it measured, which the plain script cannot say of itself. Never
run beside other work: the figures are ratios within one run, and a busy neighbour moves them. The host's
own steadiness (``hpubench doctor``'s host speed line, ``benchmarks/hostspeed.py``) is printed before and
after: on a host that reads UNSTEADY, single rounds spread widely and more rounds are needed to decide a row.

``python benchmarks/agreement.py [--rounds 5] [--workloads mlp,gpt,resnet,hf:gpt2] [--json FILE]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hostspeed  # noqa: E402

from hpubench.analysis.quality import OK  # noqa: E402
from hpubench.analysis.stats.medianci import MedianInterval, median_interval  # noqa: E402
from hpubench.analysis.tuning import CHURN_FAULTS_PER_STEP  # noqa: E402
from hpubench.measure.conditions import THREADS_ENV, plan_threads  # noqa: E402
from hpubench.measure.heap import HEAP_ENV, STEADY_ENV, USER_MALLOC_ENV  # noqa: E402
from hpubench.run.cellrun.resolve import N_BATCHES, SEED  # noqa: E402

PLAIN_LOOP = ROOT / "benchmarks" / "plainloop.py"
CONDITIONS = ("tuned", "plain")
BAND = (0.98, 1.02)  # hpubench/plain within this: the same figure (issue 33)
AGAIN = "plain again"  # the plain script run a second time in each round: the test's own A/A spread
TORCH_ONLY = "plain, torch only"  # under plain: the script short of the interned-string table's resize
# What the plain script imports beside torch: a torch-only mlp, gpt or resnet script ends 500-1,000 strings
# short of the resize, and importing pandas passes it; hf:gpt2's, importing transformers, passes it anyway.
SCRIPT_IMPORTS = "pandas"
# (batch, warm-up, measured steps): the workload's tiny batch, and about 1.5 s of measured steps on the
# 2-core dev VM, long enough that a process's start-up draw, not the clock, sets the spread.
WORKLOADS: dict[str, tuple[int, int, int]] = {
    "mlp": (64, 20, 3000),
    "gpt": (8, 10, 200),
    "resnet": (16, 10, 70),
    "hf:gpt2": (8, 10, 120),
}
# Every variable that sets the heap or the threads: removed before each condition sets its own.
CLEARED = (
    HEAP_ENV,
    THREADS_ENV,
    *USER_MALLOC_ENV,
    "GLIBC_TUNABLES",
    "OMP_NUM_THREADS",
    "OMP_WAIT_POLICY",
)


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env["HPUBENCH_NO_PROGRESS"] = "1"
    return env


def plain_env(condition: str) -> dict[str, str]:
    """The plain script's environment: under tuned, the settings a user copies from hpubench's tip."""
    env = base_env()
    if condition == "tuned":
        threads = plan_threads("cores-1", sorted(os.sched_getaffinity(0)), 1, 0, {}).threads
        env.update(
            {
                **STEADY_ENV,
                "OMP_NUM_THREADS": str(threads),
            }
        )
    return env


def run_plain(name: str, condition: str, side: str) -> dict[str, Any]:
    batch, warmup, steps = WORKLOADS[name]
    imports = [] if side == TORCH_ONLY else ["--import", SCRIPT_IMPORTS]
    out = subprocess.run(
        [sys.executable, str(PLAIN_LOOP), name, "tiny", str(batch), str(warmup), str(steps), *imports],
        env=plain_env(condition),
        capture_output=True,
        text=True,
        check=True,
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "samples_per_s": r["samples_per_s"],
        "faults": r["minor_faults_per_step"],
        "threads": r["torch_threads"],
    }


def matrix_file(names: list[str], condition: str, folder: Path) -> Path:
    grids = []
    for name in names:
        batch, warmup, steps = WORKLOADS[name]
        grids.append(
            f'[[grid]]\nworkload = "{name}"\nbatch_size = {batch}\nwarmup_steps = {warmup}\nsteps = {steps}\n'
        )
    path = folder / f"agreement-{condition}.toml"
    path.write_text(
        f'name = "agreement"\nsize = "tiny"\naccelerator = "cpu"\ncondition = "{condition}"\n'
        + "".join(grids)
    )
    return path


def run_hpubench(names: list[str], condition: str, folder: Path, rnd: int) -> dict[str, dict[str, Any]]:
    out = folder / f"run-{condition}-{rnd}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "hpubench",
            "run",
            "--matrix",
            str(matrix_file(names, condition, folder)),
            "--out",
            str(out),
        ],
        env=base_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    found: dict[str, dict[str, Any]] = {}
    for line in (out / "cells.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["status"] != "ok":
            raise SystemExit(f"hpubench cell {r['key']} {r['status']}: {r.get('reason')}")
        m, rt = r["metrics"], r["runtime"]
        faults = (rt.get("page_faults_measured") or {}).get("minor")
        found[r["cell"]["workload"]] = {
            "samples_per_s": m["samples_per_s"],
            "faults": faults / m["measured_steps"] if faults is not None else None,
            "threads": (rt.get("threads") or {}).get("intra_op"),
            "quality": r.get("quality"),
        }
    return found


def round_order(rnd: int, condition: str) -> tuple[str, ...]:
    """The contenders of one round under one condition, in the order they run. hpubench runs first in two
    rounds of every four and last in the other two, and the plain script and its repeat swap places every
    round, so that neither the hpubench ratio nor the A/A ratio leans on a fixed position."""
    pair = ("plain", AGAIN) if rnd % 2 == 0 else (AGAIN, "plain")
    scripts = (*pair, TORCH_ONLY) if condition == "plain" else pair
    return ("hpubench", *scripts) if (rnd // 2) % 2 == 0 else (*scripts, "hpubench")


def in_band(ci: MedianInterval) -> bool:
    """Whether the median ratio itself lies in the band (its interval may still reach past it)."""
    return BAND[0] <= ci.median <= BAND[1]


def verdict(ci: MedianInterval) -> str:
    """In the band where the median ratio is; outside where the median's interval lies wholly past the band;
    else "not decided": the rounds cannot tell the ratio from the band at this noise."""
    if in_band(ci):
        return "in band"
    at = f"interval {ci.low:.3f}-{ci.high:.3f} at {ci.coverage:.0%}"
    if ci.clear_of(*BAND):
        return f"OUTSIDE {BAND[0]}-{BAND[1]}: {at}"
    return f"not decided: {at} reaches the band; more rounds narrow it"


def ratios(top: list[dict[str, Any]], *bottom: list[dict[str, Any]]) -> list[float]:
    """Round by round, the first contender's figure over the geometric mean of the others' in that round."""
    return [
        a["samples_per_s"] / math.prod(b["samples_per_s"] for b in below) ** (1 / len(below))
        for a, *below in zip(top, *bottom, strict=True)
    ]


def modes(runs: list[dict[str, Any]]) -> str:
    churned = sum(1 for r in runs if r["faults"] is not None and r["faults"] >= CHURN_FAULTS_PER_STEP)
    return f"{churned}/{len(runs)} churn"


def own_verdicts(runs: list[dict[str, Any]]) -> str:
    """hpubench's own timing verdicts over the rounds ("14 ok, 6 unstable"): rounds it flagged as disturbed
    say the host, not the harness, may have moved the row; the plain script has no such check."""
    counts = Counter(r.get("quality") or "none" for r in runs)
    return ", ".join(f"{n} {q}" for q, n in sorted(counts.items(), key=lambda kv: (kv[0] != OK, kv[0])))


def summarise(
    results: dict[tuple[str, str, str], list[dict[str, Any]]], names: list[str]
) -> list[dict[str, Any]]:
    rows = []
    for condition in CONDITIONS:
        for name in names:
            h, p = results[(name, condition, "hpubench")], results[(name, condition, "plain")]
            again = results[(name, condition, AGAIN)]
            plains = p + again
            hm = statistics.median(r["samples_per_s"] for r in h)
            pm = statistics.median(r["samples_per_s"] for r in plains)
            # Each round's contenders ran minutes apart at most: their ratio leaves the machine's drift out.
            paired = ratios(h, p, again)
            ci = median_interval(paired)
            aa = median_interval(ratios(again, p))
            alone = results.get((name, condition, TORCH_ONLY))
            vs_alone = ratios(h, alone) if alone else None
            rows.append(
                {
                    "workload": name,
                    "condition": condition,
                    "hpubench": hm,
                    "plain_script": pm,
                    "ratio": ci.median,
                    "interval": [ci.low, ci.high],
                    "coverage": ci.coverage,
                    "paired_range": [min(paired), max(paired)],
                    "ratio_of_medians": hm / pm,
                    "hpubench_range": [
                        min(r["samples_per_s"] for r in h),
                        max(r["samples_per_s"] for r in h),
                    ],
                    "plain_range": [
                        min(r["samples_per_s"] for r in plains),
                        max(r["samples_per_s"] for r in plains),
                    ],
                    "hpubench_modes": modes(h),
                    "hpubench_verdicts": own_verdicts(h),
                    "plain_modes": modes(plains),
                    "threads": sorted({r["threads"] for r in h + plains}),
                    "aa_ratio": aa.median,
                    "aa_interval": [aa.low, aa.high],
                    "in_band": in_band(ci),
                    "verdict": verdict(ci),
                    "ratio_torch_only": statistics.median(vs_alone) if vs_alone else None,
                    "torch_only_range": [min(vs_alone), max(vs_alone)] if vs_alone else None,
                }
            )
    return rows


def aa_check(interval: list[float]) -> str:
    """The A/A interval should hold 1.00: the same script twice. Where it does not, the rounds lean (a
    position or a drift the pairing missed), and so may the row's ratio."""
    if interval[0] <= 1.0 <= interval[1]:
        return ""
    return " (the A/A interval misses 1.00: this row's rounds lean; read its ratio with care)"


def print_rows(rows: list[dict[str, Any]], rounds: int) -> None:
    print(
        f"\nhpubench vs a plain script of the same work, {rounds} interleaved rounds, fresh processes; "
        "ratio: median of the rounds' hpubench over the geometric mean of the plain script's two runs, "
        "with its distribution-free interval"
    )
    print(
        f"{'workload':9} {'condition':9} {'hpubench':>10} {'plain':>10} {'ratio':>6} {'interval':>13}  "
        "range hpubench / plain; heap modes (churn: processes regrowing their heap every step)"
    )
    for r in rows:
        hr, pr, ci, ar = r["hpubench_range"], r["plain_range"], r["interval"], r["aa_interval"]
        print(
            f"{r['workload']:9} {r['condition']:9} {r['hpubench']:10,.1f} {r['plain_script']:10,.1f} "
            f"{r['ratio']:6.3f} {f'{ci[0]:.3f}-{ci[1]:.3f}':>13}  "
            f"[{hr[0]:,.0f}-{hr[1]:,.0f}] / [{pr[0]:,.0f}-{pr[1]:,.0f}]; "
            f"{r['hpubench_modes']} / {r['plain_modes']}; threads {r['threads']}; "
            f"A/A {r['aa_ratio']:.3f} ({ar[0]:.3f}-{ar[1]:.3f}){aa_check(ar)}: {r['verdict']}"
        )
        print(f"{'':20} hpubench's own timing verdicts on its cells: {r['hpubench_verdicts']}")
        if r["ratio_torch_only"] is not None:
            tr = r["torch_only_range"]
            print(
                f"{'':20} against the same script importing torch alone (short of the interned-string "
                f"table's resize): {r['ratio_torch_only']:.3f} ({tr[0]:.3f}-{tr[1]:.3f})"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--json", help="also write the rows and every run here")
    args = ap.parse_args(argv)
    names = [n for n in args.workloads.split(",") if n]
    if "hf:gpt2" in names and importlib.util.find_spec("transformers") is None:
        print("note: transformers is not installed; hf:gpt2 left out", file=sys.stderr)
        names.remove("hf:gpt2")
    plain_src = PLAIN_LOOP.read_text()
    if f"SEED = {SEED}" not in plain_src or f"N_BATCHES = {N_BATCHES}" not in plain_src:
        raise SystemExit("plainloop.py's SEED or N_BATCHES no longer match the worker's; update plainloop.py")
    results: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    host: dict[str, dict[str, Any]] = {}
    hostspeed.take(host, "before", sys.stderr)
    with tempfile.TemporaryDirectory(prefix="hpubench-agreement-") as tmp:
        folder = Path(tmp)
        for rnd in range(args.rounds):
            for condition in CONDITIONS if rnd % 2 == 0 else CONDITIONS[::-1]:
                for side in round_order(rnd, condition):
                    if side == "hpubench":
                        for name, r in run_hpubench(names, condition, folder, rnd).items():
                            results.setdefault((name, condition, "hpubench"), []).append(r)
                    else:
                        for name in names:
                            results.setdefault((name, condition, side), []).append(
                                run_plain(name, condition, side)
                            )
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    hostspeed.take(host, "after", None)
    rows = summarise(results, names)
    print("\n" + hostspeed.lines(host))
    print_rows(rows, args.rounds)
    if args.json:
        runs = {"|".join(k): v for k, v in results.items()}
        Path(args.json).write_text(json.dumps({"rows": rows, "runs": runs, "host_speed": host}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
