"""The HPU paths, each run once on this machine's Gaudi modules: ``make hpu-check``.

For the first user with a Gaudi: runs ``benchmarks/hpu-check.toml`` through the CLI as a user would
(lazy, eager and ``hpu_backend`` compile; HPU graphs in lazy mode; one card and every card with DDP over
hccl; fp32, bf16, fp16 and fp8, the last two on Gaudi2+ only, skipped with the planner's reason on a
first-generation Gaudi), prints one table (per cell: status, quality verdict, samples/s, compiles in the
measured window, the bridge's graph compilations, peak memory, the modules used, the reason) and writes ONE
JSON file to send back: every cell's status, reason, traceback tail, quality, figures, runtime (software
versions, env flags, device name, module ids), plus ``hpubench doctor --json``, the hpubench commit and the
python/torch versions, so a failure on a machine we cannot reach can be diagnosed from that file alone.

On the test double (``tests/fakes``) the records say ``(test double)`` in their software versions; the
table and the JSON then say so at the top, so no figure of the double passes for a Gaudi's.

Exit 0 when every cell that could run ran, 1 when one failed (or the run stopped without its records), 2
when nothing could be verified: no HPU (no habana_frameworks, or no module), or every cell skipped (e.g.
modules held by another process); the JSON then holds doctor's findings and the skip reasons saying why.
``python benchmarks/hpu_check.py [--out DIR] [--steps N] [--warmup-steps N] [--timeout S]`` (default
``results/hpu-check``; the directory must not exist yet, so an earlier check is never overwritten).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hpubench.store.runmeta import git_commit

HERE = Path(__file__).resolve().parent
MATRIX = HERE / "hpu-check.toml"
REPORT_NAME = "hpu-check.json"
DOUBLE_MARK = "(test double)"
# Asked in a child only when doctor gives no answer: this script never imports torch or the bridge itself
# (as hpubench's launcher never does: a process that loaded the bridge must not hand the card on).
# hpubench's count, not the bridge's: the bridge counts every module of the host (C15).
COUNT_HPUS = (
    "from hpubench.accelerators.hpu.accelerator import HPUAccelerator as A; "
    "print(A.device_count() if A.is_available() else 0)"
)
TAIL = 4000  # characters kept of a child's stdout/stderr in the JSON


def hpubench(*args: str) -> subprocess.CompletedProcess[str]:
    """One CLI call, as a user types it: the check verifies the commands, not hpubench's internals."""
    return subprocess.run([sys.executable, "-m", "hpubench", *args], capture_output=True, text=True)


def doctor() -> dict[str, Any]:
    """``hpubench doctor --json`` on the check's matrix: the machine's facts a diagnosis starts from.

    A doctor that crashed or printed no JSON is kept as its exit code and output tails, never dropped:
    that too is something to send back.
    """
    proc = hpubench("doctor", "--json", "--matrix", str(MATRIX))
    try:
        found = json.loads(proc.stdout)
    except json.JSONDecodeError:
        found = None
    if isinstance(found, dict):
        return found
    return {"error": "no JSON", "exit_code": proc.returncode, **_tails(proc)}


def _tails(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return {"stdout_tail": proc.stdout[-TAIL:], "stderr_tail": proc.stderr[-TAIL:]}


def hpu_facts(doc: dict[str, Any]) -> dict[str, Any] | None:
    """Doctor's HPU entry (present, count, names, versions, absent reason), None when doctor gave none."""
    for dev in (doc.get("facts") or {}).get("devices") or []:
        if dev.get("accelerator") == "hpu":
            return dev
    return None


def hpu_count(facts: dict[str, Any] | None) -> tuple[int, str]:
    """How many modules this process sees, and why none: doctor's answer, else a bridge import in a child."""
    if facts is not None:
        return int(facts.get("count") or 0) if facts.get("present") else 0, facts.get("absent_reason") or ""
    proc = subprocess.run([sys.executable, "-c", COUNT_HPUS], capture_output=True, text=True)
    try:
        return int(proc.stdout.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):
        return 0, (proc.stderr.strip().splitlines() or ["habana_frameworks did not import"])[-1]


def records(run_dir: Path) -> list[dict[str, Any]]:
    """The run's records as stored: read back from disk, so the check sees what a user's report would."""
    store = run_dir / "cells.jsonl"
    return [json.loads(line) for line in store.read_text().splitlines()] if store.exists() else []


def read_json(path: Path) -> Any:
    """A JSON file the run may not have written (it stopped early): None then, never an exception."""
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def bridge_versions(recs: list[dict[str, Any]], facts: dict[str, Any] | None) -> list[str]:
    """Every habana_frameworks version the records and doctor name (one, unless something is off)."""
    seen = [((r.get("runtime") or {}).get("software") or {}).get("habana_frameworks") for r in recs]
    seen.append(((facts or {}).get("versions") or {}).get("habana_frameworks"))
    return sorted({v for v in seen if v})


def label(versions: list[str], names: list[str]) -> tuple[bool, str]:
    """Whether these figures come from the test double, and the line that says what they come from.

    The double's figures describe this host's CPU; the label goes above the table and into the JSON so
    they can never be read as a Gaudi's.
    """
    double = any(DOUBLE_MARK in v for v in versions)
    bridge = ", ".join(versions) or "unknown"
    if double:
        return True, (
            f"TEST DOUBLE: habana_frameworks {bridge}. Every figure below comes from tests/fakes "
            "running on this host's CPU; none was measured on a Gaudi."
        )
    devices = ", ".join(sorted(set(names) - {""})) or "an unnamed device"
    return False, f"measured on {devices}: habana_frameworks {bridge}"


def module_ids(rec: dict[str, Any]) -> dict[str, Any]:
    """The modules a cell used, as recorded: rank 0's HLS_MODULE_ID and the modules its process could see."""
    flags = (rec.get("runtime") or {}).get("env_flags") or {}
    return {
        "rank0_HLS_MODULE_ID": flags.get("HLS_MODULE_ID"),
        "HABANA_VISIBLE_MODULES": flags.get("HABANA_VISIBLE_MODULES"),
    }


def cell_summary(rec: dict[str, Any]) -> dict[str, Any]:
    """One cell of the JSON: what it was, how it ended and why, its figures and the runtime behind them."""
    rt = rec.get("runtime") or {}
    m = rec.get("metrics") or {}
    tel = {k: v for k, v in (rec.get("telemetry") or {}).items() if k != "samples"}
    return {
        "key": rec.get("key"),
        "cell": rec.get("cell"),
        "status": rec.get("status"),
        "reason": rec.get("reason"),
        "traceback_tail": rec.get("traceback_tail"),
        "quality": rec.get("quality"),
        "quality_reasons": rec.get("quality_reasons"),
        "samples_per_s": m.get("samples_per_s"),
        "samples_per_s_ci": m.get("samples_per_s_ci"),
        "measured_steps": m.get("measured_steps"),
        "loss_first": m.get("loss_first"),
        "loss_last": m.get("loss_last"),
        "compiles_measured": rt.get("compiles_measured"),
        "graph_compilations_measured": (rt.get("compile_detail") or {}).get("hpu_graph_compilations"),
        "memory": rec.get("memory"),
        "software": rt.get("software"),
        "env_flags": rt.get("env_flags"),
        "device_name": rt.get("device_name"),
        "module_ids": module_ids(rec),
        "runtime": rt,
        "telemetry": tel or None,
        "wall_s": rec.get("wall_s"),
    }


def _f(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _n(v: Any) -> str:
    return "-" if v is None else str(v)


HEAD = (
    f"{'dev':>3} {'precision':<11}{'mode':<8}{'graph':<6}{'status':<8}{'quality':<11}{'samples/s':>10}"
    f"{'compiles':>9}{'graphcomp':>10}{'peak MiB':>9}  {'module/visible':<15}reason"
)


def row(rec: dict[str, Any]) -> str:
    """One table line; the reason (a skip's rule, a failure's cause) is cut to keep the line readable."""
    cell, s = rec["cell"], cell_summary(rec)
    peak = (rec.get("memory") or {}).get("peak_allocated_bytes")
    mods = s["module_ids"]
    used = "-" if mods["rank0_HLS_MODULE_ID"] is None else "{rank0_HLS_MODULE_ID}/{HABANA_VISIBLE_MODULES}"
    graphs = "on" if cell["graphs"] else "off"
    return (
        f"{cell['devices']!s:>3} {cell['precision']:<11}{cell['mode']:<8}{graphs:<6}"
        f"{rec['status']:<8}{rec.get('quality') or '-':<11}{_f(s['samples_per_s'], ',.0f'):>10}"
        f"{_n(s['compiles_measured']):>9}{_n(s['graph_compilations_measured']):>10}"
        f"{_f(None if peak is None else peak / 2**20, ',.0f'):>9}  {used.format(**mods):<15}"
        f"{(rec.get('reason') or '')[:110]}"
    )


def environment(doc: dict[str, Any]) -> dict[str, Any]:
    """Python, torch, platform and the hpubench checkout: what the figures were made with."""
    return {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "torch": (doc.get("facts") or {}).get("torch"),
        "platform": platform.platform(),
        "hpubench_git": git_commit(HERE),
    }


def write_report(out: Path, report: dict[str, Any]) -> Path:
    """The one file to send back; anything not JSON-native (a path, a tuple) is kept as its text."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / REPORT_NAME
    path.write_text(json.dumps(report, indent=1, default=str) + "\n")
    return path


def no_hpu(out: Path, doc: dict[str, Any], why: str) -> int:
    """Nothing can be verified here: say so, keep doctor's findings in the JSON, exit 2."""
    versions = bridge_versions([], hpu_facts(doc))  # none when doctor found no module to ask
    double = any(DOUBLE_MARK in v for v in versions) if versions else None
    report = {"check": "hpu-check", "test_double": double, "habana_frameworks": versions, "exit_code": 2}
    report |= {"verdict": f"no HPU: {why or 'no module'}: nothing was verified", **environment(doc)}
    path = write_report(out, {**report, "doctor": doc})
    print(
        f"hpu-check: no HPU on this machine ({why or 'no module'}): nothing was verified. Run "
        "`make hpu-check` where habana_frameworks is installed and a Gaudi module is visible. "
        f"Doctor's findings: {path}"
    )
    return 2


def doctor_lines(doc: dict[str, Any]) -> list[str]:
    """Doctor's FAIL and WARN findings, one line each: they often explain a failed cell (a held module,
    a torch the bridge was not built for) before anyone opens the JSON."""
    if "findings" not in doc:
        return [f"doctor: {doc.get('error', 'no answer')} (exit {doc.get('exit_code')}); output in the JSON"]
    bad = [f for f in doc["findings"] if f.get("level") in ("FAIL", "WARN")]
    lines = [f"doctor: {f['level']} {f['check']}: {f['detail']}"[:160] for f in bad]
    return lines or ["doctor: every finding OK"]


def print_table(recs: list[dict[str, Any]], banner: str, double: bool) -> None:
    """The one table: the banner (the double's label, loud) above and below it when figures are a double's."""
    mark = "!!! " if double else ""
    print(f"\n{mark}{banner}")
    print(HEAD)
    for rec in recs:
        print(row(rec))
    if double:
        print(f"{mark}{banner}")


def main(argv: list[str] | None = None) -> int:
    """Doctor first (is there an HPU at all?), then the matrix through ``hpubench run``, then the verdict."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("results/hpu-check"))
    ap.add_argument("--steps", help="measured steps per cell instead of the matrix's 'auto' (CI: 2)")
    ap.add_argument("--warmup-steps", help="warm-up steps per cell instead of the matrix's 3 (CI: 1)")
    ap.add_argument("--timeout", help="seconds before a cell is killed (hpubench run's default: 900)")
    args = ap.parse_args(argv)
    if args.out.exists():
        print(f"hpu-check: {args.out} exists; give a new --out (an earlier check is never overwritten)")
        return 2
    t0 = time.monotonic()
    doc = doctor()
    facts = hpu_facts(doc)
    count, why = hpu_count(facts)
    if count == 0:
        return no_hpu(args.out, doc, why)
    names = list((facts or {}).get("names") or [])
    print(f"hpu-check: {count} HPU module(s) {names}; running {MATRIX.name} -> {args.out}", flush=True)
    extra = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k != "out" and v is not None]
    run = hpubench("run", "--matrix", str(MATRIX), "-o", str(args.out), *extra)
    recs = records(args.out)
    double, banner = label(bridge_versions(recs, facts), names)
    print_table(recs, banner, double)
    print("\n".join(doctor_lines(doc)))
    if count == 1:
        print("hpu-check: one module visible: the every-card path (DDP over hccl) was not exercised here")
    return finish(args.out, recs, run, doc, double, banner, time.monotonic() - t0)


def verdict(recs: list[dict[str, Any]], run_exit: int) -> tuple[int, str]:
    """The exit code and its one-line reason: a failure wins, then nothing verified, then all ran."""
    failed = sum(r["status"] == "failed" for r in recs)
    ran = sum(r["status"] == "ok" for r in recs)
    if failed:
        return 1, f"{failed} cell(s) failed: their reason and traceback tail are in the JSON"
    if not recs:
        return 1, f"the run wrote no record (exit {run_exit})"
    if run_exit != 0:
        return 1, f"the run exited {run_exit} although no cell failed"
    if not ran:
        return 2, "every cell was skipped: nothing was verified (see each reason, and doctor's findings)"
    return 0, "every cell that could run ran"


def finish(
    out: Path,
    recs: list[dict[str, Any]],
    run: subprocess.CompletedProcess[str],
    doc: dict[str, Any],
    double: bool,
    banner: str,
    wall: float,
) -> int:
    """The verdict line, the exit code and the one JSON file holding everything behind them."""
    code, why = verdict(recs, run.returncode)
    counts = {s: sum(r["status"] == s for r in recs) for s in ("ok", "failed", "skipped")}
    report = {
        "check": "hpu-check",
        "test_double": double,
        "label": banner,
        "exit_code": code,
        "verdict": why,
        "counts": counts,
        "wall_s": round(wall, 1),
        **environment(doc),
        "run": {"command": run.args, "exit_code": run.returncode, **_tails(run)},
        "run_meta": read_json(out / "meta.json"),
        "matrix": MATRIX.read_text(),
        "cells": [cell_summary(r) for r in recs],
        "doctor": doc,
    }
    path = write_report(out, report)
    who = "TEST DOUBLE, not a Gaudi: " if double else ""
    print(
        f"\nhpu-check ({who}{len(recs)} cells): {counts['ok']} ok, {counts['failed']} failed, "
        f"{counts['skipped']} skipped in {wall:.0f} s (run exit {run.returncode}); exit {code}: {why}"
    )
    if not recs:
        print(f"hpu-check: the run's last words: {(run.stderr.strip().splitlines() or [''])[-1]}")
    print(f"hpu-check: send back {path}")
    return code


if __name__ == "__main__":
    sys.exit(main())
