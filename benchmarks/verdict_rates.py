"""Do the timing verdicts neither cry wolf nor sleep? Quiet-run false alarms, hog and recompile catches.

Run with ``make bench`` or ``python benchmarks/verdict_rates.py [--rounds 10] [--hog-cells 6]
[--recompile-cells 4] [--isolation fork|spawn] [--json PATH]``. CPU only; every cell runs through the CLI
as a user runs it (``python -m hpubench run ... -o TMP``; ``--isolation`` is the quiet rounds' own, since
forked and spawned cells' windows start differently: docs/measurements.md). It prints figures and a check
per bar; it never asserts (the tests do: tests/unit/test_contention.py, tests/e2e/test_hog_interfered.py).
About 6-8 minutes with the defaults on a quiet 2-core machine; run it on a quiet one, since every other
process is a neighbour. The host's own steadiness (``benchmarks/hostspeed.py``) is printed before and
after the quiet rounds: the bar is for a host that reads steady, and an UNSTEADY one makes ``unstable``
verdicts that describe the host.

1. Quiet. ``hpubench run --matrix smoke`` ``--rounds`` times (at least 10 for the bar). For each timing
   verdict, the share of measured cells given it; the bar: every non-``ok`` verdict on at most 5% of them.
   The first reason of each non-ok cell is listed, and the run-queue wait share and /proc/stat share of
   every cell summarised (what the quiet machine reads). After each round, every cell on one node and one or
   two devices is shadowed by the plain training loop of the same work (``plainloop.py``, ``agreement.py``'s
   plain script: a fresh process importing pandas and nothing of hpubench's harness, with the cell's
   precision written in torch alone, ``torch.compile`` for a compile cell, the plain DDP script under
   torchrun for two ranks), with the cell's own warm-up and measured step counts, under the cell's
   condition (tuned: the tuned settings through the environment and the cell's threads; plain: the
   process's own). Its step times go through the same halves test: the share of plain windows called
   ``unstable`` is the host's own rate, beside the cells'. Cells whose own busy threads outnumber their CPUs
   (the 2-rank cell on a 2-core host) are counted apart as well: they take turns on their CPUs, which moves
   their speed on a quiet host too. Beside the shares, each side's median shift between its window's halves
   and how many of its unstable windows ran faster in their second half: a host that drifts either way
   gives about as many faster as slower, a window that starts slow gives mostly faster. Last, whether the
   bar can be judged on this host: where its own one-device loops are over the bar, the cells' rates
   describe the host, and the line says so (the bar line itself stands as measured).
2. Hogs. Two ``yes`` processes (started before the cells, killed after) beside ``--hog-cells`` repeats of
   mlp tiny ``--steps 40`` (a ~35 ms window, too short for /proc/stat's ticks). The bar: every one
   ``interfered``.
3. Recompiles. ``tests/plugins/recompiles.py`` (``recompiler``: a small function recompiled by dynamo on
   every step, cheap to compile), ``--recompile-cells`` repeats. The bar: every one ``recompiled``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import agreement  # noqa: E402
import hostspeed  # noqa: E402
import plainloop  # noqa: E402

from hpubench.analysis.quality import OK, PRECEDENCE, UNSTABLE, crowded_by_itself, findings  # noqa: E402
from hpubench.analysis.trend import halves_test  # noqa: E402
from hpubench.plan.cell import Cell  # noqa: E402
from hpubench.plan.dimensions import PLAIN  # noqa: E402
from hpubench.run.executors import ISOLATIONS  # noqa: E402
from hpubench.run.hostcondition import condition_of  # noqa: E402

QUIET_BAR = 0.05  # the largest share of quiet cells any non-ok verdict may take
ENV = {**os.environ, "HPUBENCH_NO_PROGRESS": "1"}


def run_cli(args: Sequence[str], timeout: float = 1800) -> list[dict[str, Any]]:
    """``python -m hpubench run ARGS -o TMP``: the records written (an empty list if none)."""
    with tempfile.TemporaryDirectory(prefix="hpubench-verdicts-") as tmp:
        cmd = [sys.executable, "-m", "hpubench", "run", *args, "-o", tmp]
        proc = subprocess.run(cmd, env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        path = Path(tmp) / "cells.jsonl"
        if not path.exists():
            print(f"  ! no records: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def judged(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records that carry a timing verdict (measured; skipped and failed-before-measuring ones do not)."""
    return [r for r in records if r.get("quality")]


def spread(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"median {statistics.median(values):.1%}, max {max(values):.1%} (n={len(values)})"


# The cells the plain loop shadows: one node, one device or two (the plain DDP script), any precision the loop
# writes and eager or compile mode.
SHADOWED_DEVICES = (1, 2)
SHADOWED_MODES = ("eager", "compile")


def is_plain(record: dict[str, Any]) -> bool:
    """Whether the record's cell ran under the plain condition (read from its cell, as the run decided it)."""
    return condition_of(Cell.from_dict(record["cell"])) == PLAIN


def shadow_command(record: dict[str, Any]) -> tuple[list[str], dict[str, str]] | None:
    """The plain loop of ``record``'s work and its environment, or None for a cell it does not shadow: the
    cell's precision and mode, warm-up and measured step counts, and its threads per rank under the tuned
    condition; under the plain condition, the plain environment. In both conditions the script imports
    pandas, as ``agreement.py``'s does; under plain that matters, since a plain cell's own process is past
    the import-history point such a script passes."""
    cell = record["cell"]
    if cell.get("nodes") != 1 or cell.get("devices") not in SHADOWED_DEVICES:
        return None
    if cell.get("mode") not in SHADOWED_MODES or cell.get("precision") not in plainloop.PRECISIONS:
        return None
    if cell.get("graphs"):
        return None
    counts = [record["runtime"]["batch_size"], len(record["warmup_times_s"]), len(record["step_times_s"])]
    loop = [str(agreement.PLAIN_LOOP), cell["workload"], cell["size"], *map(str, counts), "--step-times"]
    loop += ["--import", agreement.SCRIPT_IMPORTS]  # agreement.py's plain script: torch and its own stack
    loop += ["--precision", cell["precision"], *(["--compile"] if cell["mode"] == "compile" else [])]
    if cell["devices"] > 1:
        launch = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={cell['devices']}"]
        loop = [*launch, *loop]
    if is_plain(record):
        return loop, agreement.plain_env("plain")
    env = agreement.plain_env("tuned")
    threads = record["runtime"].get("threads", {}).get("intra_op")
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)  # the cell's own threads per rank
    return loop, env


@dataclass(frozen=True)
class Window:
    """One window's halves test, as the ``unstable`` verdict reads it: whether it came out ``unstable``,
    and its signed shift (second half's median step over the first's, minus 1; below 0: faster)."""

    unstable: bool
    shift: float


@dataclass(frozen=True)
class Shadowed:
    """A shadowed cell's window beside its plain loop's, for ``host_unstable``."""

    devices: int
    cell: Window
    plain: Window


def window(step_times_s: Sequence[float]) -> Window:
    """The halves test of one window (a cell's or a plain loop's step times)."""
    unstable = any(f.verdict == UNSTABLE for f in findings(step_times_s))
    return Window(unstable, halves_test(step_times_s).shift if len(step_times_s) >= 2 else 0.0)


def shadow(record: dict[str, Any]) -> Window | None:
    """The halves test of the plain loop of ``record``'s work (``shadow_command``), run now, by the cells'
    own test; None for a cell it does not shadow."""
    command = shadow_command(record)
    if command is None:
        return None
    loop, env = command
    out = subprocess.run([sys.executable, *loop], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"the plain loop failed ({out.returncode}): {out.stderr[-2000:]}")
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1]
    return window(json.loads(line)["step_times_s"])


def quiet(rounds: int, isolation: str = "fork") -> dict[str, Any]:
    print(
        f"1. Quiet: hpubench run --matrix smoke --isolation {isolation} x {rounds}; each cell shadowed by a "
        "plain loop of its work"
    )
    cells: list[dict[str, Any]] = []
    shadows: list[Shadowed] = []
    for i in range(rounds):
        t0 = time.monotonic()
        got = judged(run_cli(["--matrix", "smoke", "--isolation", isolation]))
        cells += got
        bad = Counter(r["quality"] for r in got if r["quality"] != OK)
        for r in got:
            plain = shadow(r)
            if plain is not None:
                cell = Window(r["quality"] == UNSTABLE, halves_test(r["step_times_s"]).shift)
                shadows.append(Shadowed(r["cell"]["devices"], cell, plain))
        print(
            f"  round {i + 1}: {len(got)} judged cells, {dict(bad) or 'all ok'} "
            f"({time.monotonic() - t0:.0f} s)"
        )
    counts = Counter(r["quality"] for r in cells)
    n = len(cells)
    rates = {v: counts.get(v, 0) / n if n else 0.0 for v in PRECEDENCE}
    print(f"  {'verdict':<12} {'cells':>6} {'share':>7}  bar")
    for v in PRECEDENCE:
        bar = "" if v == OK else ("ok" if rates[v] <= QUIET_BAR else f"OVER {QUIET_BAR:.0%}")
        print(f"  {v:<12} {counts.get(v, 0):>6} {rates[v]:>7.1%}  {bar}")
    for r in cells:
        if r["quality"] != OK:
            print(f"    {r['key']}: {r['quality']}: {(r.get('quality_reasons') or ['?'])[0]}")
    waits = [r["runtime"]["run_queue_wait"] for r in cells if "run_queue_wait" in r["runtime"]]
    shares = [r["runtime"]["interference"] for r in cells if "interference" in r["runtime"]]
    print(f"  run-queue wait share: {spread(waits)}; /proc/stat share of others: {spread(shares)}")
    # The plain condition's cells measure a heap glibc is still moving (hpubench.run.hostcondition): their
    # verdicts are counted apart too, so the tuned cells' rate is seen on its own.
    tuned = [r for r in cells if not is_plain(r)]
    tuned_counts = Counter(r["quality"] for r in tuned)
    if tuned:
        shown = ", ".join(f"{v} {tuned_counts.get(v, 0) / len(tuned):.1%}" for v in PRECEDENCE if v != OK)
        print(f"  tuned cells only ({len(tuned)}): {shown}")
    else:  # no cell measured (every round's run failed): said, not divided by
        print("  no tuned cells")
    crowded = [self_crowded(r) for r in cells]
    n_crowded = sum(crowded)
    unstable_crowded = sum(c and r["quality"] == UNSTABLE for c, r in zip(crowded, cells, strict=True))
    unstable_rest = sum(r["quality"] == UNSTABLE for r in cells) - unstable_crowded
    rest = n - n_crowded
    print(
        f"  cells whose own busy threads outnumber their CPUs: {n_crowded}, {unstable_crowded} unstable; "
        f"the other {rest}: {unstable_rest} unstable ({unstable_rest / rest if rest else 0:.1%})"
    )
    shadowed = host_unstable(shadows)
    print(f"  {host_reading(shadowed.get('1'))}")
    return {
        "self_crowded": {"cells": n_crowded, "unstable": unstable_crowded},
        "shadowed": shadowed,
        "cells": n,
        "counts": dict(counts),
        "tuned_counts": dict(tuned_counts),
        "not_ok": [
            {"key": r["key"], "quality": r["quality"], "reason": (r.get("quality_reasons") or [""])[0]}
            for r in cells
            if r["quality"] != OK
        ],
        "rates": rates,
        "run_queue_wait": waits,
        "interference": shares,
    }


def self_crowded(record: dict[str, Any]) -> bool:
    """Whether the cell's own busy threads outnumber its CPUs (``quality.crowded_by_itself``, the test its
    ``unstable`` reason names the cause by): such a cell takes turns on its CPUs, which moves its speed on a
    quiet host too."""
    return crowded_by_itself(record["runtime"]) is not None


def host_unstable(shadows: Sequence[Shadowed]) -> dict[str, dict[str, Any]]:
    """Print, per device count, the shadowed cells' unstable share beside their plain loops' (the one-device
    loops' share is the host's own rate), then the windows' signed shifts: the median shift, and how many
    of the unstable ones ran faster in their second half. A host that drifts either way gives about as
    many of each; a window whose start is slow gives mostly faster. Returns the figures per device count."""
    if not shadows:
        print("  no cell shadowed by a plain loop")
    out: dict[str, dict[str, Any]] = {}
    for devices in sorted({s.devices for s in shadows}):
        same = [s for s in shadows if s.devices == devices]
        cells, plains = [s.cell for s in same], [s.plain for s in same]
        n, cell, plain = len(same), sum(w.unstable for w in cells), sum(w.unstable for w in plains)
        what, loop = (
            ("one-device", "loops") if devices == 1 else (f"{devices}-rank", "DDP scripts (torchrun)")
        )
        print(
            f"  shadowed {what} cells: unstable {cell} of {n} ({cell / n:.1%}); the plain {loop} "
            f"of the same work, step counts and threads, no hpubench: {plain} of {n} ({plain / n:.1%})"
            + (", the host's own rate" if devices == 1 else "")
        )
        figures = {"cell": halves(cells), "plain": halves(plains)}
        print(
            "    second half against first (median shift; unstable ones faster of all): "
            + "; ".join(
                f"{who} {f['median_shift']:+.2%} ({f['unstable_faster']} of {f['unstable']})"
                for who, f in figures.items()
            )
        )
        out[str(devices)] = {"cells": n, "cell_unstable": cell, "plain_unstable": plain, "halves": figures}
    return out


def host_reading(one_device: dict[str, Any] | None) -> str:
    """What the quiet bar can say on this host: the one-device plain loops' ``unstable`` share is the host's
    own rate, with no hpubench in those processes. Above the bar, the host alone exceeds it, so the cells'
    rates above describe the host and cannot show whether hpubench meets the bar; within it, they are
    hpubench's to answer for. Either way the cells' share is printed beside, and the bar line stands."""
    if not one_device or not one_device["cells"]:
        return "the bar on this host: not known (no one-device cell was shadowed)"
    n = one_device["cells"]
    host, cells = one_device["plain_unstable"] / n, one_device["cell_unstable"] / n
    said = f"the host's own plain loops: unstable {host:.1%}, the cells of the same work {cells:.1%}"
    if host > QUIET_BAR:
        return (
            f"the bar on this host: not judged: {said}; the host alone is over the {QUIET_BAR:.0%} bar, so "
            "the rates above describe the host (run again on a host whose own loops stay within it)"
        )
    return f"the bar on this host: judged: {said}, the host within the {QUIET_BAR:.0%} bar"


def halves(windows: Sequence[Window]) -> dict[str, Any]:
    """The median signed shift of ``windows``, and how many of the unstable ones ran faster."""
    bad = [w for w in windows if w.unstable]
    return {
        "median_shift": statistics.median(w.shift for w in windows),
        "unstable": len(bad),
        "unstable_faster": sum(w.shift < 0 for w in bad),
    }


def hogs(cells: int) -> dict[str, Any]:
    print(f"2. Two `yes` hogs beside mlp tiny --steps 40, {cells} repeats")
    procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    try:
        time.sleep(0.5)
        args = ["-w", "mlp", "--size", "tiny", "-a", "cpu", "--precision", "32-true", "--mode", "eager"]
        got = judged(run_cli([*args, "--steps", "40", "--repeat", str(cells), "--no-telemetry"]))
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return caught(got, "interfered", "run_queue_wait")


def recompiles(cells: int) -> dict[str, Any]:
    print(f"3. A workload that recompiles every step (tests/plugins/recompiles.py), {cells} repeats")
    plugin = str(ROOT / "tests" / "plugins" / "recompiles.py")
    args = ["--workloads-from", plugin, "-w", "recompiler", "--size", "tiny", "-a", "cpu", "--mode", "eager"]
    more = ["--precision", "32-true", "--steps", "10", "--repeat", str(cells), "--no-telemetry"]
    return caught(judged(run_cli([*args, *more])), "recompiled", "compiles_measured")


def caught(records: Sequence[dict[str, Any]], verdict: str, fact: str) -> dict[str, Any]:
    """The share of ``records`` whose verdict is ``verdict`` (the bar: all), each listed with ``fact``."""
    for r in records:
        print(
            f"  {r['quality']:<11} {fact}={r['runtime'].get(fact)}  {(r.get('quality_reasons') or [''])[0]}"
        )
    hit = sum(r["quality"] == verdict for r in records)
    share = hit / len(records) if records else 0.0
    check = "ok" if records and hit == len(records) else "MISSED"
    print(f"  {verdict}: {hit} of {len(records)} ({share:.0%}; bar 100%): {check}")
    return {"cells": len(records), "caught": hit, "share": share}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10, help="quiet smoke runs (the bar needs at least 10)")
    ap.add_argument("--hog-cells", type=int, default=6, help="cells run beside the two hogs")
    ap.add_argument("--recompile-cells", type=int, default=4, help="cells of the recompiling workload")
    ap.add_argument(
        "--isolation",
        choices=ISOLATIONS,
        default="fork",
        help="how the quiet rounds' cells start (hpubench run --isolation; fork is its default)",
    )
    ap.add_argument("--json", type=Path, help="also write the figures here")
    a = ap.parse_args(argv)
    print(
        f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs "
        "(others' work skews the quiet rates)"
    )
    host: dict[str, dict[str, Any]] = {}
    hostspeed.take(host, "before")
    t0 = time.monotonic()
    out: dict[str, Any] = {"quiet": quiet(a.rounds, a.isolation), "isolation": a.isolation}
    hostspeed.take(host, "after quiet rounds")  # the bar is about the quiet rounds: taken before the hogs
    out.update(hogs=hogs(a.hog_cells), recompiles=recompiles(a.recompile_cells), host_speed=host)
    if a.rounds < 10:
        print(f"note: {a.rounds} quiet rounds: the bar asks for at least 10")
    print(f"total {time.monotonic() - t0:.0f} s")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
