"""``hpubench run`` and ``hpubench profile`` (``run`` with the profiler on): parse, call hpubench.api, print.

The commands that run cells, apart from the ones that only read results: the most flags, the estimate
table printed before anything runs, the live progress view while cells run, the results table after.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from hpubench.errors import UsageError
from hpubench.measure.heap import check_heap_env
from hpubench.plan import shard as shard_mod
from hpubench.plan.cliparse import check_timeout, out_dir
from hpubench.plan.modeldirs import with_model_dirs
from hpubench.plan.runoptions import ProfileOptions, RunOptions
from hpubench.plugins.files import import_limit_s
from hpubench.present.cli.consoles import err_console, out_console, print_observations
from hpubench.present.cli.options import (
    DEFAULT_TIMEOUT_S,
    BudgetOpt,
    DimsOpt,
    EnergyPriceOpt,
    EstimatesFromOpt,
    FilesOpt,
    IsolationOpt,
    LoaderOpt,
    MasterAddrOpt,
    MasterPortOpt,
    MatrixOpt,
    MaxTimeOpt,
    MemoryEveryOpt,
    MinStepsOpt,
    MinTimeOpt,
    NodeRankOpt,
    ProfileActiveOpt,
    ProfileWaitOpt,
    ProfileWarmOpt,
    ResumeOpt,
    ShardOpt,
    StepsOpt,
    TargetCiOpt,
    TelemetryIntervalOpt,
    TelemetryOpt,
    TimeoutOpt,
    TopOpt,
    WarmOpt,
    WideOpt,
    dimension_options,
    dimension_overrides,
)
from hpubench.present.eta import PLAIN_EVERY_S


def register(app: typer.Typer) -> None:
    """Add ``run`` and ``profile`` to the main app."""
    app.command()(run)
    app.command("profile")(profile_cmd)


def _run_options(
    *,
    profile: bool,
    wait: int,
    warmup: int,
    active: int,
    top: int,
    record_shapes: bool,
    telemetry: bool,
    telemetry_interval: float,
    memory_every: int,
    loader: str,
    energy_price: float | None,
) -> RunOptions:
    """What to observe beside the figures, from run's (or profile's) flags."""
    return RunOptions(
        profile=ProfileOptions(wait, warmup, active, top, record_shapes) if profile else None,
        telemetry=telemetry,
        telemetry_interval_s=telemetry_interval,
        memory_every=memory_every,
        loader=loader,
        energy_price_per_kwh=energy_price,
    )


@dimension_options
def run(
    matrix: MatrixOpt = None,
    dims: DimsOpt = None,
    steps: StepsOpt = None,
    target_ci: TargetCiOpt = None,
    min_steps: MinStepsOpt = None,
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    warmup_steps: WarmOpt = None,
    repeat: Annotated[
        int,
        typer.Option(
            "--repeat",
            help="Run the whole matrix N times (passes interleaved); each record keeps its repeat index, "
            "so 'hpubench gate' can use between-run variance.",
        ),
    ] = 1,
    out: Annotated[
        str | None, typer.Option("--out", "-o", help="Run directory (default results/<time>).")
    ] = None,
    resume: ResumeOpt = False,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    isolation: IsolationOpt = "fork",
    workloads_from: FilesOpt = None,
    node_rank: NodeRankOpt = None,
    master_addr: MasterAddrOpt = None,
    master_port: MasterPortOpt = None,
    telemetry: TelemetryOpt = True,
    telemetry_interval: TelemetryIntervalOpt = 0.1,
    memory_every: MemoryEveryOpt = 0,
    loader: LoaderOpt = "device",
    energy_price: EnergyPriceOpt = None,
    profile: Annotated[
        bool, typer.Option("--profile", help="Also profile every cell (as 'hpubench profile' does).")
    ] = False,
    profile_wait: Annotated[int, typer.Option("--profile-wait", hidden=True)] = 1,
    profile_warmup: Annotated[int, typer.Option("--profile-warmup", hidden=True)] = 1,
    profile_active: Annotated[int, typer.Option("--profile-active", hidden=True)] = 3,
    top: Annotated[int, typer.Option("--top", hidden=True)] = 20,
    record_shapes: Annotated[bool, typer.Option("--record-shapes", hidden=True)] = False,
    progress_every: Annotated[float, typer.Option("--progress-every", hidden=True)] = PLAIN_EVERY_S,
    budget: BudgetOpt = None,
    estimates_from: EstimatesFromOpt = None,
    shard: ShardOpt = None,
    wide: WideOpt = False,
) -> None:
    """Run a matrix of cells, each in its own process, and store one record per cell.

    Before anything runs it prints each cell's estimated time and memory per device; cells that cannot
    fit in memory are skipped with the estimate in their reason.

    CPU cells' threads follow HPUBENCH_CPU_THREADS: all (torch's default, one per core), all-passive
    (the same, OMP_WAIT_POLICY=PASSIVE), cores-1 (the default: a core left for everything else) or
    pinned (cores-1 threads, affinity limited to them); a set OMP_NUM_THREADS wins. Each record keeps
    the threads in force and the share of its CPUs other processes took while it measured.

    Every cell's processes hold glibc malloc's thresholds fixed (HPUBENCH_MALLOC=steady, the default), so
    no process draws a heap trimmed and regrown every step; HPUBENCH_MALLOC=system leaves glibc's own,
    and a user's MALLOC_*_ variables, GLIBC_TUNABLES or LD_PRELOADed allocator win.
    """
    # deferred, as every command's work: the CLI starts (and prints --help) without numpy (api, shardplan,
    # the estimates), the accelerator registry or the live view (about 0.3 s together)
    from hpubench import api  # deferred: numpy (api)
    from hpubench.accelerators import check_environment  # deferred: the accelerator registry, ~30 ms
    from hpubench.plan import shardplan  # deferred: numpy
    from hpubench.present.cli import estimate as cli_estimate  # deferred: numpy (plan.preflight)
    from hpubench.present.liveview import LiveView  # deferred: rich.live, ~10 ms

    started = cli_estimate.now()
    budget_s = cli_estimate.parse_budget(budget)
    my_shard = shard_mod.resolve(shard, os.environ)

    check_timeout(timeout)
    if isolation not in ("fork", "spawn"):
        raise UsageError(f"--isolation must be 'fork' or 'spawn', got {isolation!r}")
    if repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {repeat}")
    if not progress_every > 0:
        raise UsageError(f"--progress-every must be a positive number of seconds, got {progress_every}")
    check_environment(os.environ)
    check_heap_env(os.environ)
    import_limit_s(os.environ)  # HPUBENCH_PLUGIN_IMPORT_TIMEOUT, read by every worker
    run_options = _run_options(
        profile=profile,
        wait=profile_wait,
        warmup=profile_warmup,
        active=profile_active,
        top=top,
        record_shapes=record_shapes,
        telemetry=telemetry,
        telemetry_interval=telemetry_interval,
        memory_every=memory_every,
        loader=loader,
        energy_price=energy_price,
    )
    dims, workloads_from = with_model_dirs(dims, workloads_from)
    spec = api.resolve_spec(
        matrix,
        dimension_overrides(
            dims,
            steps,
            warmup_steps,
            auto={"target_ci": target_ci, "min_steps": min_steps, "min_time": min_time, "max_time": max_time},
        ),
    )
    node = api.resolve_cluster(
        spec, os.environ, node_rank=node_rank, master_addr=master_addr, master_port=master_port
    )
    out = out_dir(out) or Path("results") / time.strftime("%Y%m%d-%H%M%S")
    if node is None or node.is_node_zero:
        api.check_out_dir(out, resume)
    with api.open_launcher(workloads_from, isolation, cluster=node) as launcher:
        try:
            plan, pre = cli_estimate.estimate(api.make_plan(spec, launcher), launcher, estimates_from)
        except UsageError:
            api.abandon_out_dir(out)  # refused before anything was written: leave no trace
            raise
        shard_info = None
        if my_shard is not None:
            plan, pre, shard_info = shardplan.apply(plan, pre, my_shard)
            err_console.print(shardplan.describe(shard_info), highlight=False, markup=False, soft_wrap=True)
        budget_run = None
        if budget_s is not None:
            budget_run = cli_estimate.start_budget(pre, budget_s, repeat, started)
        first = budget_run.plan_from(0, 0) if budget_run is not None else None
        table, lines = cli_estimate.estimate_table(pre, f"plan: matrix {spec.name}", first, repeat, budget_s)
        err_console.print(table)
        for line in lines:
            err_console.print(line, highlight=False, markup=False, soft_wrap=True)
        if node is None or node.is_node_zero:
            cli_estimate.write_estimates(out, pre, first)
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
        runnable = sum(pc.runnable for pc in plan.cells)
        err_console.print(
            f"[bold]{len(plan.cells)}[/] cells: {runnable} to run, {len(plan.cells) - runnable} skipped "
            + (f"(x{repeat} repeats) " if repeat > 1 else "")
            + f"-> {out}"
        )
        deadline = started + budget_s if budget_s is not None else None
        estimate = cli_estimate.run_estimate(pre, first, repeat, deadline)
        total = len(plan.cells) * repeat
        with LiveView(
            err_console,
            total,
            runnable * repeat,
            progress_every,
            estimate=estimate,
            deadline_clock=cli_estimate.now,
        ) as view:
            results = api.run_plan(
                plan,
                launcher,
                out,
                resume=resume,
                timeout_s=timeout,
                on_event=view.on_event,
                argv=sys.argv,
                repeat=repeat,
                options=run_options,
                budget=budget_run,
                meta_extra=None if shard_info is None else {"shard": shard_info},
            )
    from hpubench.present.narrowtable import results_view  # deferred: pulls numpy (see above)

    out_console.print(*results_view(results, f"hpubench run -> {out}", out_console.width, wide), sep="\n")
    print_observations(results, out)
    failed = sum(r.status == "failed" for r in results)
    if failed:
        where = f"{out}/cells.jsonl" if node is None or node.is_node_zero else "node 0's records"
        err_console.print(f"[red]{failed} cell(s) failed[/]; reasons are in the table and in {where}")
        raise typer.Exit(1)


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
