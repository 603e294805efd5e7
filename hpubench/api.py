"""The programmatic API behind the CLI: resolve a matrix, detect, plan, run.

The CLI only parses and prints.
"""

from __future__ import annotations

import errno
import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from hpubench import accelerators
from hpubench.analysis import steadiness, tuning
from hpubench.analysis.history import Point
from hpubench.errors import ProbeFailed, UsageError, WriteFailed, os_error_text
from hpubench.measure import doctor
from hpubench.plan import matrix
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.plan.inventory import Inventory
from hpubench.plan.modeldirs import is_lightning_source
from hpubench.plan.runoptions import RunOptions
from hpubench.run import addrcheck, cluster, interrupt
from hpubench.run import doctorfacts as doctor_probe
from hpubench.run.events import Event
from hpubench.run.launch import Launcher
from hpubench.run.preflight import BudgetedStore, BudgetRun, fit_memory
from hpubench.store import baselines, runlock
from hpubench.store.layout import same_results
from hpubench.store.readback import load_results
from hpubench.store.record import CellResult
from hpubench.store.rundir import ResultStore
from hpubench.store.runmeta import run_metadata


def resolve_spec(matrix_arg: str | None, overrides: dict[str, Any]) -> matrix.MatrixSpec:
    """A preset name or a TOML path, restricted/overridden by the dimensions given on the command line."""
    base = None
    if matrix_arg:
        if matrix_arg in matrix.PRESETS:
            base = matrix.preset(matrix_arg)
        elif matrix_arg.endswith(".toml") or os.path.sep in matrix_arg:
            if not Path(matrix_arg).is_file():
                raise UsageError(f"matrix file {matrix_arg!r} does not exist; give a path to a .toml file")
            base = matrix.load_matrix_file(matrix_arg)
        else:
            raise UsageError(
                f"unknown matrix {matrix_arg!r}; use a preset ({', '.join(matrix.PRESETS)}) "
                "or a path to a .toml file"
            )
    return matrix.spec_from_options(base=base, **overrides)


def check_workload_files(workloads_from: Sequence[Path] | None) -> None:
    """Refuse a ``--workloads-from`` path that is neither a Python file nor a transformers model directory;
    ``run`` checks before it claims its run directory, so the refusal leaves nothing behind."""
    for p in workloads_from or []:
        f = str(p)
        if is_lightning_source(f):
            continue  # checked where the flag was read (hpubench.plan.modeldirs.lightning_source)
        if Path(f).is_dir() and not (Path(f) / "config.json").is_file():
            raise UsageError(
                f"--workloads-from {f!r} is a directory without a transformers config.json; fix: give a "
                "Python file of workloads, or a model directory"
            )
        if not (Path(f).is_file() or (Path(f) / "config.json").is_file()):
            raise UsageError(
                f"workload file {f!r} does not exist; fix the path given to --workloads-from "
                "(a Python file, or a directory holding a transformers config.json)"
            )


def open_launcher(
    workloads_from: Sequence[Path] | None, isolation: str = "fork", cluster: cluster.ClusterEnv | None = None
) -> Launcher:
    """The launcher the CLI's commands run and detect with, after checking every ``--workloads-from`` path.

    The one place the CLI makes a launcher (tests replace it to prove bad input never reaches one).
    """
    check_workload_files(workloads_from)
    return Launcher(
        workload_files=[str(p) for p in workloads_from or []], isolation=isolation, cluster=cluster
    )


@dataclass(frozen=True)
class Plan:
    spec: matrix.MatrixSpec
    inventory: Inventory
    catalog: dict[str, tuple[str, ...]]
    cells: list[PlannedCell]


def make_plan(spec: matrix.MatrixSpec, launcher: Launcher) -> Plan:
    inventory, catalog = launcher.detect()
    cells = matrix.expand(spec, inventory, catalog, accelerators.kinds())
    if not cells and spec.exclude:
        whole = len(matrix.expand(replace(spec, exclude=()), inventory, catalog, accelerators.kinds()))
        raise UsageError(
            f"matrix {spec.name!r}: its excludes remove all {whole} cell(s), so nothing would run; "
            "fix: narrow the [[exclude]] tables or widen the grid"
        )
    if launcher.workload_options is not None:
        check_option_names([pc.cell for pc in cells], launcher.workload_options)
    cells = skip_unavailable(cells, launcher.workload_unavailable)
    cluster.check_cells(launcher.cluster, [pc.cell for pc in cells if pc.runnable])
    return Plan(spec, inventory, catalog, cells)


def skip_unavailable(cells: list[PlannedCell], unavailable: Mapping[str, str]) -> list[PlannedCell]:
    """Runnable cells of a workload that cannot run with this installation (``Workload.unavailable``: an
    optional package missing) skipped with that reason, before anything runs."""
    return [
        PlannedCell(pc.cell, f"{pc.cell.workload}: {unavailable[pc.cell.workload]}")
        if pc.runnable and pc.cell.workload in unavailable
        else pc
        for pc in cells
    ]


def check_option_names(cells: list[Cell], accepted: Mapping[str, Sequence[str]]) -> None:
    """Refuse an option no workload of the matrix knows before anything runs (a typo would otherwise run
    every cell only to fail each one)."""
    for cell in cells:
        known = accepted.get(cell.workload)
        if known is None:
            continue
        bad = sorted({name for name, _ in cell.options} - set(known))
        if bad:
            raise UsageError(
                f"workload {cell.workload!r} has no option {', '.join(bad)}; "
                f"it accepts: {', '.join(known) or '(none)'}; fix the --option / options name"
            )


def tuning_pairs(run: str) -> list[tuning.Tuning]:
    """The configurations ``run`` measured under both conditions (a bad path: a UsageError)."""
    return tuning.tunings(load_results([run]))


def diagnose(
    spec: matrix.MatrixSpec,
    launcher: Launcher,
    paired: Sequence[tuning.Tuning] | None = None,
    run: str | None = None,
) -> tuple[list[doctor.Finding], dict[str, Any]]:
    """``hpubench doctor``: every finding about this machine and the facts behind them.

    ``paired``: the tuned and plain pairs of ``run`` (:func:`tuning_pairs`), whose measured tips are the
    findings about the user's own training; without them, what a plain script gets and how to measure it.

    The host's facts are read here; torch's and the devices' in a fresh child (``detect_for_doctor``);
    each accelerator judges its own facts; the plan is ``spec`` expanded as ``make_plan`` does, with the
    cells that cannot fit in memory skipped as ``list cells`` and ``run`` skip them (the probe counts
    the models; no rate is calibrated).
    """
    host = doctor_probe.host_facts()
    found = doctor.host_findings(host)
    training = tuning.doctor_findings(paired, host.environ, run)  # printed last, after the plan
    facts: dict[str, Any] = {"host": asdict(host)}
    try:
        data = launcher.detect_for_doctor()
    except ProbeFailed as exc:
        found.append(doctor.torch_finding(None, f"the detection child failed: {exc}"))
        found.append(
            doctor.Finding(
                doctor.PLAN, "cells", doctor.WARN, "not planned: detection failed", "fix the failures above"
            )
        )
        return found + training, facts
    child = data.get("doctor", {})
    facts.update(
        torch=child.get("torch"),
        devices=child.get("devices", []),
        steadiness=child.get("steadiness"),
        inventory=data["inventory"],
    )
    found.append(doctor.torch_finding(child.get("torch"), None))
    found.append(steadiness.steadiness_finding(child.get("steadiness")))
    for raw in child.get("devices", []):
        device = doctor.DeviceFacts.from_dict(raw)
        found += accelerators.get(device.accelerator).doctor_findings(device)
    catalog = {k: tuple(v) for k, v in data.get("workloads", {}).items()}
    inventory = Inventory.from_dict(data["inventory"])
    cells = matrix.expand(spec, inventory, catalog, accelerators.kinds())
    fitted, problem = fit_memory(
        cells,
        inventory,
        python=launcher.python,
        workload_files=launcher.workload_files,
        env=launcher.base_env,
        runner=launcher.probe if launcher.isolation == "fork" else None,
    )
    memory = [
        (new.cell.key, new.skip_reason or "")
        for old, new in zip(cells, fitted, strict=True)
        if old.runnable and not new.runnable
    ]
    summary = matrix.explain(cells)
    found += doctor.plan_findings(
        spec.name, summary.total, summary.runnable - len(memory), summary.reasons, memory, problem
    )
    return found + training, facts


def check_out_dir(out: Path, resume: bool) -> None:
    """Refuse to mix a new run into an existing one, and claim ``out`` as this process's alone.

    The directory is checked, created and locked (``hpubench.store.runlock``: one writer per run directory,
    held until this process ends), then checked again: a run that ended between the two would otherwise
    be mixed into. Every refusal happens before anything is written.
    """
    try:
        runlock.check_free(out)  # a live run is named as such, not as "already holds a run"
        _refuse_existing(out, resume)
    except OSError as exc:  # a name too long, a parent that is a file: the path itself is unusable
        raise _unusable_out(out, exc) from None
    runlock.acquire(out)
    try:
        _refuse_existing(out, resume)
        store = ResultStore(out)
        if resume and store.exists():  # records a resume cannot read are refused now, not mid-run
            store.load()
            store.read_meta()
    except (UsageError, OSError) as exc:
        runlock.abandon(out)
        if isinstance(exc, OSError):
            raise _unusable_out(out, exc) from None
        raise


def _unusable_out(out: Path, exc: OSError) -> UsageError:
    return UsageError(f"--out {str(out)[:80]!r}: {os_error_text(exc)}; fix: give a shorter, writable path")


def abandon_out_dir(out: Path) -> None:
    """Undo :func:`check_out_dir` when the run is refused before writing anything (bad matrix, options)."""
    runlock.abandon(out)


def _refuse_existing(out: Path, resume: bool) -> None:
    if not resume and ResultStore(out).exists():
        raise UsageError(
            f"results directory {str(out)!r} already holds a run; "
            "pass --resume to continue it or choose another --out"
        )


def resolve_cluster(
    spec: matrix.MatrixSpec,
    environ: Mapping[str, str],
    *,
    node_rank: int | None = None,
    master_addr: str | None = None,
    master_port: int | None = None,
) -> cluster.ClusterEnv | None:
    """This node's place in a multi-node run (``hpubench.run.cluster``); None when no cell spans nodes.

    Checked before anything starts, so a misconfigured node fails in a second, not at a rendezvous
    timeout: node 0's address must resolve (within a few seconds), and node 0 also checks that it can
    host the rendezvous on MASTER_PORT.
    """
    max_nodes = max((n for g in spec.grids for n in g.nodes), default=1)
    env = cluster.resolve(
        environ, max_nodes=max_nodes, node_rank=node_rank, master_addr=master_addr, master_port=master_port
    )
    if env is not None:
        addrcheck.check_resolves(env.master_addr, env.master_addr_from, env.master_port)
    if env is not None and env.is_node_zero:
        cluster.check_port_free(env.master_port, env.master_port_from)
    return env


class NodeStore(ResultStore):
    """The store of a node other than 0: it reads (a shared --out may hold node 0's records, which keeps
    --resume in step with node 0) but never writes: node 0 writes each multi-node cell's one record."""

    def append(self, result: CellResult) -> None:
        return None

    def write_meta(self, meta: dict[str, Any]) -> None:
        return None


def run_plan(
    plan: Plan,
    launcher: Launcher,
    out: Path,
    *,
    resume: bool,
    timeout_s: float,
    on_event: Callable[[Event], None],
    argv: list[str],
    repeat: int = 1,
    options: RunOptions | None = None,
    budget: BudgetRun | None = None,
    meta_extra: Mapping[str, Any] | None = None,
) -> list[CellResult]:
    """``options``: what to observe beside the figures; traces go under ``out``/traces. ``budget``: steps
    per cell re-planned before each one to end within the budget (``hpubench.run.preflight``).
    ``meta_extra``: more facts for ``meta.json`` (a shard's partition)."""
    node = launcher.cluster
    if node is not None and not node.is_node_zero:
        store: ResultStore = NodeStore(out)
    else:
        store = ResultStore(out) if budget is None else BudgetedStore(out, budget)
    if options is not None:
        options = replace(options, output_dir=str(Path(out).resolve()))
    try:
        if not store.exists() or store.read_meta() is None:
            store.write_meta(
                run_metadata(
                    argv=argv,
                    inventory=plan.inventory,
                    spec_name=plan.spec.name,
                    repeat=repeat,
                    **({"cluster": asdict(node)} if node is not None else {}),
                    **(meta_extra or {}),
                )
            )
        return launcher.run(
            plan.cells,
            store,
            timeout_s=timeout_s,
            resume=resume,
            on_event=on_event if budget is None else _both(budget.on_event, on_event),
            repeat=repeat,
            options=options,
            adjust=None if budget is None else budget.adjust,
        )
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the launcher stopped every cell; say how to go on
        words = interrupted_words(plan, store, repeat, resume_command(argv, out))
        raise interrupt.RunInterrupted(words, interrupt.exit_code(exc)) from None
    except WriteFailed as exc:  # disk full, read-only: the launcher stopped every cell; say how to go on
        raise UsageError(f"{exc}; fix the disk, then resume with: {resume_command(argv, out)}") from None
    except OSError as exc:  # a log or a cell's scratch file on a full disk: the same, else a real bug
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            raise
        raise UsageError(
            f"{os_error_text(exc)} ({exc.filename}); the records written so far are intact; fix the disk, "
            f"then resume with: {resume_command(argv, out)}"
        ) from None


def interrupted_words(plan: Plan, store: ResultStore, repeat: int, resume: str) -> str:
    """``interrupted: 7 of 15 cells recorded; resume with: ...``: a skipped cell counts once, as it is
    recorded once."""
    expected = {(pc.cell.key, rep) for pc in plan.cells for rep in range(repeat if pc.runnable else 1)}
    try:
        stored = [(r.key, r.repeat) for r in store.load()]
    except (OSError, ValueError, UsageError):  # unreadable now: the count is then a lower bound
        stored = []
    return interrupt.summary(interrupt.recorded_count(expected, stored), len(expected), resume)


def resume_command(argv: list[str], out: Path) -> str:
    """The command line that continues this run: the same arguments, its --out, and --resume."""
    args = list(argv[1:])
    if not any(a in ("-o", "--out") or a.startswith("--out=") for a in args):
        args += ["--out", str(out)]
    if "--resume" not in args:
        args.append("--resume")
    return shlex.join(["hpubench", *args])


def _both(first: Callable[[Event], None], second: Callable[[Event], None]) -> Callable[[Event], None]:
    def call(ev: Event) -> None:
        first(ev)
        second(ev)

    return call


# ---- history: saved baselines as points of a series ----------------------------------------------------

GIT_TIMEOUT_S = 5


def commit_time(commit: str | None, cwd: str | Path | None = None) -> int | None:
    """Seconds since the epoch of ``commit`` as git here knows it; None where it does not."""
    if not commit:
        return None
    try:
        p = subprocess.run(
            ["git", "show", "-s", "--format=%ct", commit, "--"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = p.stdout.strip().splitlines()
    return int(text[0]) if p.returncode == 0 and text and text[0].isdigit() else None


def load_points(refs: Sequence[str], directory: Path, cwd: str | Path | None = None) -> list[Point]:
    """Each named baseline (or run directory) as a history point; every saved baseline when none is named."""
    names = list(refs) or sorted(baselines.read_index(directory))
    paths = [baselines.resolve(ref, directory) for ref in names]
    twice = same_results(paths)
    if twice is not None:
        raise UsageError(f"{twice[0]} and {twice[1]} are the same results; fix: give each baseline once")
    points = []
    for ref, path in zip(names, paths, strict=True):
        meta = ResultStore(path if path.is_dir() else path.parent).read_meta() or {}
        saved = meta.get("baseline") if isinstance(meta.get("baseline"), dict) else {}
        git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
        points.append(
            Point(
                name=str(saved.get("name") or ref),
                records=tuple(load_results([str(path)])),
                commit=git.get("commit"),
                dirty=git.get("dirty"),
                commit_time=commit_time(git.get("commit"), cwd),
                started_at=meta.get("started_at"),
                saved_at=saved.get("saved_at"),
                spreads=baselines.read_run_to_run(path),
            )
        )
    return points
