"""``hpubench run`` and ``hpubench profile`` (``run`` with the profiler on): parse, call hpubench.api, print.

The commands that run cells, apart from the ones that only read results: the most flags, the estimate
table printed before anything runs, the live progress view while cells run, the results table after.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from hpubench.errors import UsageError
from hpubench.measure.heap import check_heap_env
from hpubench.plan import shard as shard_mod
from hpubench.plan.cliparse import check_repeat, check_timeout, out_dir
from hpubench.plan.modeldirs import with_model_dirs
from hpubench.plan.runoptions import RunOptions
from hpubench.plan.shard import Shard
from hpubench.plugins.files import import_limit_s
from hpubench.present.cli.consoles import err_console, out_console, print_observations, print_tuning
from hpubench.present.cli.options import (
    DEFAULT_TIMEOUT_S,
    DimsOpt,
    EnergyPriceOpt,
    FilesOpt,
    IsolationOpt,
    LoaderOpt,
    MatrixOpt,
    MaxTimeOpt,
    MemoryEveryOpt,
    MinStepsOpt,
    MinTimeOpt,
    ProfileActiveOpt,
    ProfileWaitOpt,
    ProfileWarmOpt,
    ResumeOpt,
    StepsOpt,
    TargetCiOpt,
    TelemetryIntervalOpt,
    TelemetryOpt,
    TimeoutOpt,
    TopOpt,
    WarmOpt,
    dimension_options,
    dimension_overrides,
    flag_options,
)
from hpubench.present.cli.runflags import RunFlags
from hpubench.run.executors import ISOLATIONS
from hpubench.strategy.pgtimeout import pg_timeout_s


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``profile`` to the main app."""
    app.command()(run)
    app.command("profile")(profile_cmd)


@dataclass(frozen=True)
class _Setup:
    """What ``run`` settled from its flags and the environment before a launcher starts."""

    started: float  # the --budget clock starts here, before anything else is done
    budget_s: float | None
    shard: Shard | None  # --shard, else the Slurm array task; None: every cell
    options: RunOptions
    spec: Any
    node: Any  # this node of a multi-node run, None: a single node
    out: Path
    workloads_from: list[Path]  # --workloads-from plus the directories of every -w hf:<path>

    @property
    def writes_records(self) -> bool:
        """Whether this node writes the run directory: only node 0 does in a multi-node run."""
        return self.node is None or self.node.is_node_zero


@dataclass(frozen=True)
class _Planned:
    """The plan ``run`` runs: cells that cannot fit skipped, sharded, fitted to the budget."""

    plan: Any
    pre: Any  # the preflight: every cell's estimate
    budget_run: Any  # the --budget re-planner, None without --budget
    first: Any  # the budget's plan before the first cell, None without --budget
    shard_info: dict[str, Any] | None


def _check_flags(flags: RunFlags) -> None:
    """Refuse bad flag values and environment variables before anything starts or is written.

    Each check is one UsageError line; they run in this order so that a command with several bad inputs
    reports the same one as it always has."""
    from hpubench.accelerators import check_environment  # deferred: the accelerator registry, ~30 ms

    check_timeout(flags.timeout)
    if flags.isolation not in ISOLATIONS:
        raise UsageError(f"--isolation must be {' or '.join(map(repr, ISOLATIONS))}, got {flags.isolation!r}")
    check_repeat(flags.repeat, 1)
    if not flags.progress_every > 0:
        raise UsageError(f"--progress-every must be a positive number of seconds, got {flags.progress_every}")
    check_environment(os.environ)
    check_heap_env(os.environ)
    import_limit_s(os.environ)  # HPUBENCH_PLUGIN_IMPORT_TIMEOUT, read by every worker
    pg_timeout_s(os.environ)  # HPUBENCH_PG_TIMEOUT_S, read by every rank


def _prepare(flags: RunFlags) -> _Setup:
    """Parse and check every flag, then settle the spec, this node and the run directory.

    Logic, not presentation (it belongs in hpubench.api): everything here happens before a launcher
    starts, so bad input costs no worker start-up; the run directory is claimed (on node 0 only, the
    one that writes records) only once every flag has been accepted."""
    from hpubench import api  # deferred: numpy (api)
    from hpubench.present.cli import estimate as cli_estimate  # deferred: numpy (run.preflight)

    started = cli_estimate.now()
    budget_s = cli_estimate.parse_budget(flags.budget)
    my_shard = shard_mod.resolve(flags.shard, os.environ)
    _check_flags(flags)
    options = flags.run_options()
    dims, workloads_from = with_model_dirs(flags.dims, flags.workloads_from)
    overrides = dimension_overrides(dims, flags.steps, flags.warmup_steps, auto=flags.auto_steps())
    spec = api.resolve_spec(flags.matrix, overrides)
    node = api.resolve_cluster(
        spec,
        os.environ,
        node_rank=flags.node_rank,
        master_addr=flags.master_addr,
        master_port=flags.master_port,
    )
    out = out_dir(flags.out) or Path("results") / time.strftime("%Y%m%d-%H%M%S")
    setup = _Setup(started, budget_s, my_shard, options, spec, node, out, workloads_from)
    api.check_workload_files(workloads_from)
    if setup.writes_records:
        api.check_out_dir(out, flags.resume)
    return setup


def _plan(flags: RunFlags, setup: _Setup, launcher: Any) -> _Planned:
    """Estimate every cell (skipping those that cannot fit), take this shard, fit the budget.

    Logic, not presentation (it belongs in hpubench.api), but for the shard's one-line description,
    printed as soon as the shard is taken as it always was. A plan refused before anything ran leaves
    no run directory behind."""
    from hpubench import api  # deferred: numpy (api)
    from hpubench.present.cli import estimate as cli_estimate  # deferred: numpy (run.preflight)
    from hpubench.run import shardplan  # deferred: numpy

    try:
        plan, pre = cli_estimate.estimate(api.make_plan(setup.spec, launcher), launcher, flags.estimates_from)
    except UsageError:
        api.abandon_out_dir(setup.out)  # refused before anything was written: leave no trace
        raise
    shard_info = None
    if setup.shard is not None:
        plan, pre, shard_info = shardplan.apply(plan, pre, setup.shard)
        err_console.print(shardplan.describe(shard_info), highlight=False, markup=False, soft_wrap=True)
    budget_run = None
    if setup.budget_s is not None:
        budget_run = cli_estimate.start_budget(pre, setup.budget_s, flags.repeat, setup.started)
    first = budget_run.plan_from(0, 0) if budget_run is not None else None
    return _Planned(plan, pre, budget_run, first, shard_info)


def _show_plan(flags: RunFlags, setup: _Setup, planned: _Planned) -> None:
    """Before anything runs: the estimate table, the estimates file, this node's role, the cell count.

    The estimates file is written here, between the table and the counts, where it always was: only on
    the node that writes records."""
    from hpubench.present.cli import estimate as cli_estimate  # deferred: numpy (run.preflight)

    title = f"plan: matrix {setup.spec.name}"
    table, lines = cli_estimate.estimate_table(
        planned.pre, title, planned.first, flags.repeat, setup.budget_s
    )
    err_console.print(table)
    for line in lines:
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)
    if setup.writes_records:
        cli_estimate.write_estimates(setup.out, planned.pre, planned.first)
    _print_node_role(setup.node, setup.out)
    cells = planned.plan.cells
    runnable = sum(pc.runnable for pc in cells)
    err_console.print(
        f"[bold]{len(cells)}[/] cells: {runnable} to run, {len(cells) - runnable} skipped "
        + (f"(x{flags.repeat} repeats) " if flags.repeat > 1 else "")
        + f"-> {setup.out}"
    )


def _print_node_role(node: Any, out: Path) -> None:
    """In a multi-node run, say what this node does, and on node 0 how to start the others."""
    if node is not None and node.is_node_zero:
        err_console.print(
            f"{node.describe()}: node 0 hosts each multi-node cell's rendezvous on port "
            f"{node.master_port} and writes the records; start the same command on the other nodes "
            "with their NODE_RANK and MASTER_ADDR set to this host",
            highlight=False,
        )
    elif node is not None:
        err_console.print(
            f"{node.describe()}: this node runs its share of the multi-node cells; node 0 writes "
            f"every record, so nothing is stored here (logs only, in {out}/logs)",
            highlight=False,
        )


def _run_live(flags: RunFlags, setup: _Setup, planned: _Planned, launcher: Any) -> list[Any]:
    """Run the plan under the live progress view, which is told the estimates and the budget's deadline."""
    from hpubench import api  # deferred: numpy (api)
    from hpubench.present.cli import estimate as cli_estimate  # deferred: numpy (run.preflight)
    from hpubench.present.liveview import LiveView  # deferred: rich.live, ~10 ms

    plan, repeat = planned.plan, flags.repeat
    deadline = setup.started + setup.budget_s if setup.budget_s is not None else None
    estimate = cli_estimate.run_estimate(planned.pre, planned.first, repeat, deadline)
    runnable = sum(pc.runnable for pc in plan.cells)
    total = len(plan.cells) * repeat
    with LiveView(
        err_console,
        total,
        runnable * repeat,
        flags.progress_every,
        estimate=estimate,
        deadline_clock=cli_estimate.now,
    ) as view:
        return api.run_plan(
            plan,
            launcher,
            setup.out,
            resume=flags.resume,
            timeout_s=flags.timeout,
            on_event=view.on_event,
            argv=sys.argv,
            repeat=repeat,
            options=setup.options,
            budget=planned.budget_run,
            meta_extra=None if planned.shard_info is None else {"shard": planned.shard_info},
        )


def _show_results(flags: RunFlags, setup: _Setup, results: list[Any]) -> None:
    """The results table and what was observed beside it; exit 1 when any cell failed."""
    from hpubench.present.narrowtable import results_view  # deferred: pulls numpy

    out = setup.out
    out_console.print(
        *results_view(results, f"hpubench run -> {out}", out_console.width, flags.wide), sep="\n"
    )
    print_observations(results, out)
    print_tuning(results)
    failed = sum(r.status == "failed" for r in results)
    if failed:
        where = f"{out}/cells.jsonl" if setup.writes_records else "node 0's records"
        err_console.print(f"[red]{failed} cell(s) failed[/]; reasons are in the table and in {where}")
        raise typer.Exit(1)


@dimension_options
@flag_options(RunFlags)
def run(flags: RunFlags) -> None:
    """Run a matrix of cells, each in its own process, and store one record per cell.

    Before anything runs it prints each cell's estimated time and memory per device; cells that cannot
    fit in memory are skipped with the estimate in their reason.

    CPU cells' threads follow HPUBENCH_CPU_THREADS: all (torch's default, one per core), all-passive
    (the same, OMP_WAIT_POLICY=PASSIVE), cores-1 (the default: a core left for everything else) or
    pinned (cores-1 threads, affinity limited to them; each rank its own CPUs); a set OMP_NUM_THREADS
    wins. Each record keeps the threads in force and the share of its CPUs other processes took while it
    measured.

    Every cell's processes hold glibc malloc's thresholds fixed (HPUBENCH_MALLOC=steady, the default), so
    no process draws a heap trimmed and regrown every step; HPUBENCH_MALLOC=system leaves glibc's own,
    and a user's MALLOC_*_ variables, GLIBC_TUNABLES or LD_PRELOADed allocator win.
    """
    # deferred, as every command's work (here and in the helpers): the CLI starts (and prints --help)
    # without numpy (api, shardplan, the estimates), the accelerator registry or the live view
    from hpubench import api  # deferred: numpy (api)

    setup = _prepare(flags)
    with api.open_launcher(setup.workloads_from, flags.isolation, cluster=setup.node) as launcher:
        planned = _plan(flags, setup, launcher)
        _show_plan(flags, setup, planned)
        results = _run_live(flags, setup, planned, launcher)
    _show_results(flags, setup, results)


@dimension_options
def profile_cmd(
    matrix: MatrixOpt = None,
    dims: DimsOpt = None,
    steps: StepsOpt = None,
    target_ci: TargetCiOpt = None,
    min_steps: MinStepsOpt = None,
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    warmup_steps: WarmOpt = None,
    out: Annotated[
        str | None, typer.Option("--out", "-o", help="Run directory (default results/profile-<time>).")
    ] = None,
    resume: ResumeOpt = False,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    isolation: IsolationOpt = "fork",
    workloads_from: FilesOpt = None,
    wait: ProfileWaitOpt = 1,
    warmup: ProfileWarmOpt = 1,
    active: ProfileActiveOpt = 3,
    top: TopOpt = 20,
    record_shapes: Annotated[
        bool, typer.Option("--record-shapes", help="Record input shapes in the trace (more overhead).")
    ] = False,
    memory_every: MemoryEveryOpt = 1,
    telemetry: TelemetryOpt = True,
    telemetry_interval: TelemetryIntervalOpt = 0.1,
    loader: LoaderOpt = "device",
    energy_price: EnergyPriceOpt = None,
) -> None:
    """Run cells as 'run' does, then profile each one with torch.profiler.

    After the plain measured steps (whose figures stay untouched), wait + warmup + active more steps run
    under the profiler. Each cell gets a Chrome/Perfetto trace in OUT/traces/ and a top-N operator
    table (self time, calls, % of step) in its record; a memory timeline is sampled every step.
    """
    run(
        matrix=matrix,
        dims=dims,
        steps=steps,
        target_ci=target_ci,
        min_steps=min_steps,
        min_time=min_time,
        max_time=max_time,
        warmup_steps=warmup_steps,
        out=str(out_dir(out) or Path("results") / time.strftime("profile-%Y%m%d-%H%M%S")),
        resume=resume,
        timeout=timeout,
        isolation=isolation,
        workloads_from=workloads_from,
        telemetry=telemetry,
        telemetry_interval=telemetry_interval,
        memory_every=memory_every,
        loader=loader,
        energy_price=energy_price,
        profile=True,
        profile_wait=wait,
        profile_warmup=warmup,
        profile_active=active,
        top=top,
        record_shapes=record_shapes,
    )
