"""Command line: parse, call hpubench.api, print. No logic lives here.

Every bad input ends as one line on stderr and exit code 2: click's own usage errors are caught and
flattened too, so a pipeline never has to parse a usage box or a traceback.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

try:  # recent typer releases vendor click; older ones use the click package
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exc
from rich.console import Console

from hpubench import __version__
from hpubench.errors import UsageError
from hpubench.measure.autosteps import AutoSteps
from hpubench.plan import shard as shard_mod
from hpubench.plan.cliparse import check_timeout, out_dir
from hpubench.plan.modeldirs import with_model_dirs
from hpubench.present.cli.options import dimension_options
from hpubench.present.cli.results import ResultsGroup
from hpubench.present.envtable import env_table
from hpubench.present.eta import PLAIN_EVERY_S
from hpubench.run import interrupt
from hpubench.run.pluginload import DEFAULT_LIMIT_S, import_limit_s

# Plain click help (rich_markup_mode=None): typer's rich panels label every flag "<bool>" and need ~100
# columns; plain help fits 80 and shows a flag as just its name.
HELP_STYLE = None
app = typer.Typer(
    rich_markup_mode=HELP_STYLE,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Training benchmarks on Intel Gaudi (HPU), CUDA GPUs and CPUs.",
)
list_app = typer.Typer(
    rich_markup_mode=HELP_STYLE,
    no_args_is_help=True,
    help="Show cells, workloads or presets without running anything.",
)
app.add_typer(list_app, name="list")


def _print_version(value: bool) -> None:
    if value:
        out_console.print(f"hpubench {__version__}", highlight=False, markup=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Training benchmarks on Intel Gaudi (HPU), CUDA GPUs and CPUs."""


def _piped_width() -> int:
    """Piped output (CI logs, files) is 240 columns wide, not rich's 80, so keys stay whole; COLUMNS wins."""
    raw = os.environ.get("COLUMNS", "")
    return int(raw) if raw.isdigit() and int(raw) >= 40 else 240


# emoji=False: names print as written ("hf:llama: tiny" must not become a llama emoji).
out_console = Console(emoji=False) if sys.stdout.isatty() else Console(emoji=False, width=_piped_width())
err_console = Console(stderr=True, emoji=False)
if not sys.stderr.isatty():
    err_console = Console(stderr=True, emoji=False, width=_piped_width())
WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide", help="Every column and whole cell keys, however wide the terminal (default: fit it)."
    ),
]

DEFAULT_TIMEOUT_S = 900.0

MatrixOpt = Annotated[
    str | None, typer.Option("--matrix", "-m", help="Preset (smoke, full) or a .toml matrix file.")
]
# The dimension options (--workload, --size, ...) come from hpubench.plan.dimensions via @dimension_options.
DimsOpt = dict[str, list[str] | None] | None
StepsOpt = Annotated[
    str | None,
    typer.Option(
        "--steps",
        help="Measured steps per cell: a number (exact), or 'auto': measure in rounds until the throughput "
        "interval's half-width is within --target-ci, between --min-steps/--min-time and --max-time.",
    ),
]
TargetCiOpt = Annotated[
    str | None,
    typer.Option("--target-ci", help="--steps auto: interval half-width to reach, relative (default 2%)."),
]
AUTO_DEFAULTS = AutoSteps()  # the --help texts quote the defaults from the one place they are set
MinStepsOpt = Annotated[
    str | None,
    typer.Option("--min-steps", help=f"--steps auto: steps at least (default {AUTO_DEFAULTS.min_steps})."),
]
MinTimeOpt = Annotated[
    str | None,
    typer.Option(
        "--min-time", help=f"--steps auto: seconds measured at least (default {AUTO_DEFAULTS.min_time_s:g})."
    ),
]
MaxTimeOpt = Annotated[
    str | None,
    typer.Option(
        "--max-time",
        help=f"--steps auto: seconds measured per cell at most (default {AUTO_DEFAULTS.max_time_s:g}).",
    ),
]
WarmOpt = Annotated[int | None, typer.Option("--warmup-steps", help="Warm-up steps per cell (excluded).")]
FilesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--workloads-from",
        help="Python file(s) registering workloads; each import may take HPUBENCH_PLUGIN_IMPORT_TIMEOUT "
        f"seconds (default {DEFAULT_LIMIT_S:g}).",
    ),
]
# What to observe beside the figures (hpubench.plan.runoptions); none of these changes a cell or its key.
TelemetryOpt = Annotated[
    bool,
    typer.Option(
        "--telemetry/--no-telemetry",
        help="Sample power/energy during the measured steps (HLML on HPU, NVML on CUDA, RAPL on CPU); "
        "absent sources are recorded as absent.",
    ),
]
TelemetryIntervalOpt = Annotated[
    float, typer.Option("--telemetry-interval", help="Seconds between telemetry polls.")
]
MemoryEveryOpt = Annotated[
    int,
    typer.Option(
        "--memory-every",
        help="Memory timeline: sample device memory after every warm-up step and every K-th measured "
        "step (0 = off).",
    ),
]
LoaderOpt = Annotated[
    str,
    typer.Option(
        "--loader",
        help="device (batches already on the device) or host: also time a pass fed by a host-side "
        "loader, data wait vs compute per step.",
    ),
]
EnergyPriceOpt = Annotated[
    float | None,
    typer.Option("--energy-price", help="Electricity price per kWh, for energy cost figures (no default)."),
]
ProfileWaitOpt = Annotated[int, typer.Option("--wait", help="Profiler schedule: steps before tracing.")]
ProfileWarmOpt = Annotated[
    int, typer.Option("--warmup", help="Profiler schedule: traced-but-discarded steps (profiler start-up).")
]
ProfileActiveOpt = Annotated[
    int, typer.Option("--active", help="Profiler schedule: steps traced and tabled.")
]
TopOpt = Annotated[int, typer.Option("--top", help="Rows in the operator table.")]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue a run: only cells without a result run.")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="Seconds before a cell is killed.")]
EstimatesFromOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--estimates-from",
        help="Earlier run directories: estimate cells with the same key from their measured step times "
        "(otherwise from FLOPs and a matmul rate calibrated here).",
    ),
]
BudgetOpt = Annotated[
    str | None,
    typer.Option(
        "--budget",
        help="Wall-time budget for the whole run, e.g. 90s, 60m, 2h: steps per cell are chosen to fit "
        "(at least 1 warm-up + 2 steps), cells that cannot fit are skipped up front with their estimate, "
        "and the run ends within the budget + 10%.",
    ),
]
ShardOpt = Annotated[
    str | None,
    typer.Option(
        "--shard",
        help="Run shard K of N (1/3, 2/3, 3/3: numbered from 1) of the cells, balanced by FLOPs at a nominal "
        "rate; default: from a Slurm job array (SLURM_ARRAY_TASK_ID/COUNT/MIN), 1/1 = every cell. "
        "Merge the shards with 'hpubench results merge'.",
    ),
]
IsolationOpt = Annotated[
    str,
    typer.Option(
        "--isolation",
        help="fork (pre-warmed server, tens of ms per cell) or spawn (a fresh interpreter per cell: pays "
        "`import torch` again each time, seconds per cell; for stacks where forking after import is unsafe).",
    ),
]


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
):
    from hpubench.plan.runoptions import ProfileOptions, RunOptions

    return RunOptions(
        profile=ProfileOptions(wait, warmup, active, top, record_shapes) if profile else None,
        telemetry=telemetry,
        telemetry_interval_s=telemetry_interval,
        memory_every=memory_every,
        loader=loader,
        energy_price_per_kwh=energy_price,
    )


def _print_observations(results, run_dir: Path | None) -> None:
    """Operator tables, memory timelines, loader splits and energy, for the cells that have them."""
    from hpubench.present.tables import absent_telemetry_notes, observation_tables

    for table in observation_tables(results, None if run_dir is None else str(run_dir)):
        out_console.print(table)
    for line in absent_telemetry_notes(results):
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)


# Multi-node (hpubench.run.cluster): each overrides its environment variable on this node.
NodeRankOpt = Annotated[
    int | None,
    typer.Option(
        "--node-rank", help="This node's index, 0 on the node hosting the rendezvous (env NODE_RANK)."
    ),
]
MasterAddrOpt = Annotated[
    str | None,
    typer.Option("--master-addr", help="Node 0's address, needed on other nodes (env MASTER_ADDR)."),
]
MasterPortOpt = Annotated[
    int | None,
    typer.Option("--master-port", help="A free TCP port on node 0 for the rendezvous (env MASTER_PORT)."),
]


def _overrides(dims: dict[str, list[str] | None], steps=None, warmup=None, auto=None):
    from hpubench.plan.cliparse import parse_dimensions

    return parse_dimensions(**dims, steps=steps, warmup_steps=warmup, auto=auto)


def _launcher(workloads_from: list[Path] | None, isolation: str = "fork", cluster=None):
    from hpubench.run.launch import Launcher

    files = [str(p) for p in workloads_from or []]
    for f in files:
        if not (Path(f).is_file() or (Path(f) / "config.json").is_file()):
            raise UsageError(
                f"workload file {f!r} does not exist; fix the path given to --workloads-from "
                "(a Python file, or a directory holding a transformers config.json)"
            )
    return Launcher(workload_files=files, isolation=isolation, cluster=cluster)


@app.command()
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
    """
    from hpubench import api
    from hpubench.core.accelerators import check_environment
    from hpubench.plan import shardplan
    from hpubench.present.cli import estimate as cli_estimate
    from hpubench.present.liveview import LiveView

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
        _overrides(
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
    with _launcher(workloads_from, isolation, cluster=node) as launcher:
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
    from hpubench.present.narrowtable import results_view

    out_console.print(*results_view(results, f"hpubench run -> {out}", out_console.width, wide), sep="\n")
    _print_observations(results, out)
    failed = sum(r.status == "failed" for r in results)
    if failed:
        where = f"{out}/cells.jsonl" if node is None or node.is_node_zero else "node 0's records"
        err_console.print(f"[red]{failed} cell(s) failed[/]; reasons are in the table and in {where}")
        raise typer.Exit(1)


@app.command("profile")
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


@list_app.command("cells")
@dimension_options
def list_cells(
    matrix: MatrixOpt = None,
    dims: DimsOpt = None,
    workloads_from: FilesOpt = None,
    estimates_from: EstimatesFromOpt = None,
    budget: BudgetOpt = None,
    repeat: Annotated[int, typer.Option("--repeat", help="With --budget: plan for N passes.")] = 1,
    skipped: Annotated[
        bool, typer.Option("--skipped", help="List each skipped cell too (default: counted by reason).")
    ] = False,
) -> None:
    """What a run would do: every cell with its estimated time and memory per device, and why the skipped
    ones are skipped; with --budget, the steps each cell would get. Runs no cell (a short probe counts the
    models on meta and times a linear layer)."""
    from hpubench import api
    from hpubench.present.cli import estimate as cli_estimate

    started = cli_estimate.now()
    budget_s = cli_estimate.parse_budget(budget)
    if repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {repeat}")

    dims, workloads_from = with_model_dirs(dims, workloads_from)
    spec = api.resolve_spec(matrix, _overrides(dims))
    with _launcher(workloads_from) as launcher:
        _plan, pre = cli_estimate.estimate(api.make_plan(spec, launcher), launcher, estimates_from)
    first = None
    if budget_s is not None:
        first = cli_estimate.start_budget(pre, budget_s, repeat, started).plan_from(0, 0)
    title = f"matrix {spec.name}: {len(pre.cells)} cells"
    table, lines = cli_estimate.estimate_table(pre, title, first, repeat, budget_s, show_skipped=skipped)
    out_console.print(table)
    for line in lines:
        out_console.print(line, highlight=False, markup=False, soft_wrap=True)


@list_app.command("workloads")
def list_workloads(workloads_from: FilesOpt = None) -> None:
    """Registered workloads (built-in, entry points, --workloads-from files) and their sizes."""
    with _launcher(workloads_from) as launcher:
        _inventory, catalog = launcher.detect()
    for name, sizes in catalog.items():
        out_console.print(f"{name}: {', '.join(sizes)}")


@list_app.command("presets")
def list_presets() -> None:
    """The built-in matrix presets."""
    from hpubench.plan import matrix

    for name in matrix.PRESETS:
        spec = matrix.preset(name)
        out_console.print(f"{name}: {len(spec.grids)} grid(s)")


@app.command()
def env(workloads_from: FilesOpt = None) -> None:
    """What hpubench detects on this machine: accelerators, device names and counts."""
    with _launcher(workloads_from) as launcher:
        inventory, catalog = launcher.detect()
    out_console.print(env_table(inventory, f"hpubench {__version__}: accelerators"))
    out_console.print(f"workloads: {', '.join(catalog)}")


results_app = typer.Typer(
    cls=ResultsGroup,
    rich_markup_mode=HELP_STYLE,
    help="Print the results of one or more runs ('results merge': join shards' run directories).",
)
app.add_typer(results_app, name="results")


@results_app.command("show")
def results(
    paths: Annotated[list[Path], typer.Argument(help="Run directories or cells.jsonl files.")],
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="Also show operator tables, memory timelines, loader splits and energy where recorded.",
        ),
    ] = False,
    wide: WideOpt = False,
) -> None:
    """Print the results of one or more runs ('hpubench results merge DIR... -o DIR' joins the run
    directories of a sharded run into one: see 'hpubench results merge --help')."""
    from hpubench.present.narrowtable import results_view
    from hpubench.store.frame import to_dataframe
    from hpubench.store.readback import load_results

    if fmt not in ("table", "csv", "json"):
        raise UsageError(f"--format must be table, csv or json, got {fmt!r}")
    loaded = load_results([str(p) for p in paths])
    if fmt == "table":
        out_console.print(
            *results_view(loaded, ", ".join(str(p) for p in paths), out_console.width, wide), sep="\n"
        )
        if profile:
            _print_observations(loaded, paths[0] if len(paths) == 1 and paths[0].is_dir() else None)
    elif fmt == "csv":
        sys.stdout.write(to_dataframe(loaded).to_csv(index=False))
    else:
        sys.stdout.write(to_dataframe(loaded).to_json(orient="records", indent=1) + "\n")


PricesOpt = Annotated[
    Path | None,
    typer.Option("--prices", help="TOML file that overrides or extends the price and peak tables."),
]


@app.command()
def report(
    paths: Annotated[list[Path], typer.Argument(help="Run directories or cells.jsonl files.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write (replaced atomically).")],
    fmt: Annotated[
        str | None, typer.Option("--format", help="html, csv, parquet or json (default: from -o's suffix).")
    ] = None,
    prices: PricesOpt = None,
    price_here: Annotated[
        float | None,
        typer.Option("--price-here", help="$ per device-hour of the machine the results ran on."),
    ] = None,
    epoch_samples: Annotated[
        int | None,
        typer.Option("--epoch-samples", help="Also show time and cost to process this many samples."),
    ] = None,
) -> None:
    """Write a self-contained HTML report (or a csv/parquet/json table) of one or more result sets."""
    import reports

    summary = reports.report(
        paths, out, fmt=fmt, prices_file=prices, price_here=price_here, epoch_samples=epoch_samples
    )
    c = summary.counts
    err_console.print(
        f"wrote {summary.out} ({summary.format}, {summary.size_bytes / 1e6:.1f} MB): {summary.result_sets} "
        f"result set(s), {c['ok']} measured, {c['failed']} failed, {c['skipped']} skipped",
        highlight=False,
    )
    if summary.unpriced:
        err_console.print(
            f"no price for {', '.join(summary.unpriced)}: give --price-here or --prices for $ figures",
            highlight=False,
            markup=False,
        )


@app.command()
def compare(
    base: Annotated[Path, typer.Argument(help="Base result set (run directory or cells.jsonl).")],
    candidate: Annotated[Path, typer.Argument(help="Candidate result set, compared against the base.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="HTML file to write (replaced atomically).")],
    prices: PricesOpt = None,
    base_accelerator: Annotated[
        str | None, typer.Option("--base-accelerator", help="Only the base's cells on this accelerator.")
    ] = None,
    candidate_accelerator: Annotated[
        str | None,
        typer.Option("--candidate-accelerator", help="Only the candidate's cells on this accelerator."),
    ] = None,
    statistic: Annotated[
        str,
        typer.Option(
            "--statistic",
            help="What each run is summarised by in the ratio and its test (the estimator 'gate' uses): "
            "mean (default: what training delivers and prices apply to), min (fastest step, the gate's "
            "default, steadiest on a shared machine) or median.",
        ),
    ] = "mean",
    wide: WideOpt = False,
) -> None:
    """Compare two result sets cell by cell (e.g. Gaudi vs Gaudi2): ratios with CIs, geometric means."""
    import reports
    from hpubench.present.narrowcompare import compare_view

    result = reports.comparison(
        base,
        candidate,
        out,
        prices_file=prices,
        base_accelerator=base_accelerator,
        candidate_accelerator=candidate_accelerator,
        statistic=statistic,
    )
    out_console.print(*compare_view(result, out_console.width, wide), sep="\n")
    err_console.print(f"wrote {out}", highlight=False, markup=False)


from hpubench.present.cli.doctor import register as _register_doctor  # noqa: E402 - needs the app above
from hpubench.present.cli.gate import register as _register_ci_commands  # noqa: E402 - needs the app above
from hpubench.present.cli.history import register as _register_history  # noqa: E402 - needs the app above
from hpubench.present.cli.results import register as _register_results  # noqa: E402 - needs the app above

_register_ci_commands(app, out_console, err_console)  # gate, baseline save|list, export
_register_doctor(app, out_console, err_console)  # doctor
_register_results(results_app, out_console, err_console)  # results merge
_register_history(app, out_console, err_console)  # history


def main(argv: list[str] | None = None) -> None:
    """Entry point: exit 2 with one line for any bad input, never a traceback for it."""
    try:
        with interrupt.sigterm_raises():  # SIGTERM unwinds like Ctrl-C: children stopped, scratch removed
            # standalone_mode=False: returns typer.Exit's code instead of raising it
            code = app(args=argv, prog_name="hpubench", standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except interrupt.RunInterrupted as exc:  # what was recorded and the command that resumes
        err_console.print(exc.message, highlight=False, markup=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except UsageError as exc:
        err_console.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(2)
    except click_exc.NoArgsIsHelpError:
        sys.exit(0)
    except click_exc.UsageError as exc:
        hint = f"; see '{exc.ctx.command_path} --help'" if exc.ctx else ""
        msg = " ".join(exc.format_message().split())
        err_console.print(f"error: {msg}{hint}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(2)
    except typer.Abort:  # typer's own: typer >= 0.16's vendored click module has no Abort/Exit
        err_console.print("aborted")
        sys.exit(130)
    except typer.Exit as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # typer's own word for Ctrl-C (SIGTERM: 143)
            err_console.print("interrupted")
            sys.exit(interrupt.exit_code(exc.__cause__))
        sys.exit(exc.exit_code)
