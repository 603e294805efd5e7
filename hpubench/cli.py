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
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from hpubench import __version__
from hpubench.errors import UsageError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Training benchmarks on Intel Gaudi (HPU), CUDA GPUs and CPUs.",
)
list_app = typer.Typer(
    no_args_is_help=True, help="Show cells, workloads or presets without running anything."
)
app.add_typer(list_app, name="list")

# Piped output (CI logs, files) gets wide tables instead of rich's 80-column default, so keys stay whole.
out_console = Console() if sys.stdout.isatty() else Console(width=240)
err_console = Console(stderr=True) if sys.stderr.isatty() else Console(stderr=True, width=240)

DEFAULT_TIMEOUT_S = 900.0

MatrixOpt = Annotated[
    str | None, typer.Option("--matrix", "-m", help="Preset (smoke, full) or a .toml matrix file.")
]
WorkloadOpt = Annotated[
    list[str] | None, typer.Option("--workload", "-w", help="Workload(s); repeat or comma-separate.")
]
SizeOpt = Annotated[list[str] | None, typer.Option("--size", help="tiny and/or standard.")]
AccOpt = Annotated[list[str] | None, typer.Option("--accelerator", "-a", help="cpu, cuda, hpu, auto or all.")]
DevOpt = Annotated[
    list[str] | None, typer.Option("--devices", "-d", help="Count, 'auto', or indices like '[0,2]'.")
]
NodesOpt = Annotated[list[str] | None, typer.Option("--nodes", help="Number of nodes.")]
PrecOpt = Annotated[
    list[str] | None, typer.Option("--precision", "-p", help="32-true, bf16-mixed, 16-mixed, bf16-true, fp8.")
]
ModeOpt = Annotated[list[str] | None, typer.Option("--mode", help="eager, lazy (HPU) or compile.")]
GraphsOpt = Annotated[list[str] | None, typer.Option("--graphs", help="on/off: HPU graphs or CUDA graphs.")]
BatchOpt = Annotated[list[str] | None, typer.Option("--batch-size", "-b", help="Per-device batch size(s).")]
StepsOpt = Annotated[int | None, typer.Option("--steps", help="Measured steps per cell.")]
WarmOpt = Annotated[int | None, typer.Option("--warmup-steps", help="Warm-up steps per cell (excluded).")]
FilesOpt = Annotated[
    list[Path] | None, typer.Option("--workloads-from", help="Python file(s) registering workloads.")
]


def _split(values: list[str] | None) -> list[str] | None:
    """Repeated options and comma-separated values both work; '[0,2]' stays one value (device indices)."""
    if not values:
        return None
    out: list[str] = []
    for v in values:
        v = v.strip()
        if v.startswith("["):
            out.append(v)
        else:
            out += [p.strip() for p in v.split(",") if p.strip()]
    return out


def _overrides(
    workload, size, accelerator, devices, nodes, precision, mode, graphs, batch_size, steps, warmup
):
    from hpubench.cliparse import parse_dimensions

    return parse_dimensions(
        workload=_split(workload),
        size=_split(size),
        accelerator=_split(accelerator),
        devices=_split(devices),
        nodes=_split(nodes),
        precision=_split(precision),
        mode=_split(mode),
        graphs=_split(graphs),
        batch_size=_split(batch_size),
        steps=steps,
        warmup_steps=warmup,
    )


def _launcher(workloads_from: list[Path] | None, isolation: str = "fork"):
    from hpubench.launch import Launcher

    files = [str(p) for p in workloads_from or []]
    for f in files:
        if not Path(f).is_file():
            raise UsageError(f"workload file {f!r} does not exist; fix the path given to --workloads-from")
    return Launcher(workload_files=files, isolation=isolation)


@app.command()
def run(
    matrix: MatrixOpt = None,
    workload: WorkloadOpt = None,
    size: SizeOpt = None,
    accelerator: AccOpt = None,
    devices: DevOpt = None,
    nodes: NodesOpt = None,
    precision: PrecOpt = None,
    mode: ModeOpt = None,
    graphs: GraphsOpt = None,
    batch_size: BatchOpt = None,
    steps: StepsOpt = None,
    warmup_steps: WarmOpt = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Run directory (default results/<time>).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue a run: only cells without a result run.")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds before a cell is killed.")
    ] = DEFAULT_TIMEOUT_S,
    isolation: Annotated[
        str, typer.Option("--isolation", help="fork (pre-warmed, fast) or spawn (fresh interpreter).")
    ] = "fork",
    workloads_from: FilesOpt = None,
) -> None:
    """Run a matrix of cells, each in its own process, and store one record per cell."""
    from hpubench import api
    from hpubench.core.accelerators.hpu import validate_op_list_env

    if timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {timeout}; give seconds, e.g. --timeout 600")
    if isolation not in ("fork", "spawn"):
        raise UsageError(f"--isolation must be 'fork' or 'spawn', got {isolation!r}")
    validate_op_list_env(os.environ)
    spec = api.resolve_spec(
        matrix,
        _overrides(
            workload,
            size,
            accelerator,
            devices,
            nodes,
            precision,
            mode,
            graphs,
            batch_size,
            steps,
            warmup_steps,
        ),
    )
    out = out or Path("results") / time.strftime("%Y%m%d-%H%M%S")
    api.check_out_dir(out, resume)
    with _launcher(workloads_from, isolation) as launcher:
        plan = api.make_plan(spec, launcher)
        runnable = sum(pc.runnable for pc in plan.cells)
        err_console.print(
            f"[bold]{len(plan.cells)}[/] cells: {runnable} to run, {len(plan.cells) - runnable} skipped "
            f"-> {out}"
        )
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err_console,
            transient=False,
        ) as progress:
            task = progress.add_task("starting", total=len(plan.cells))

            def on_event(ev) -> None:
                if ev.kind == "started":
                    progress.update(task, description=f"running {ev.key}")
                else:
                    progress.update(task, advance=1, description=f"{ev.kind} {ev.key}")

            results = api.run_plan(
                plan, launcher, out, resume=resume, timeout_s=timeout, on_event=on_event, argv=sys.argv
            )
    from hpubench.tables import results_table

    out_console.print(results_table(results, title=f"hpubench run -> {out}"))
    failed = sum(r.status == "failed" for r in results)
    if failed:
        err_console.print(
            f"[red]{failed} cell(s) failed[/]; reasons are in the table and in {out}/cells.jsonl"
        )
        raise typer.Exit(1)


@list_app.command("cells")
def list_cells(
    matrix: MatrixOpt = None,
    workload: WorkloadOpt = None,
    size: SizeOpt = None,
    accelerator: AccOpt = None,
    devices: DevOpt = None,
    nodes: NodesOpt = None,
    precision: PrecOpt = None,
    mode: ModeOpt = None,
    graphs: GraphsOpt = None,
    batch_size: BatchOpt = None,
    workloads_from: FilesOpt = None,
) -> None:
    """What a run would do: every cell, and why the skipped ones are skipped. Runs nothing."""
    from hpubench import api

    spec = api.resolve_spec(
        matrix,
        _overrides(
            workload, size, accelerator, devices, nodes, precision, mode, graphs, batch_size, None, None
        ),
    )
    with _launcher(workloads_from) as launcher:
        plan = api.make_plan(spec, launcher)
    table = Table(title=f"matrix {spec.name}: {len(plan.cells)} cells")
    table.add_column("#", justify="right")
    table.add_column("cell")
    table.add_column("status")
    for i, pc in enumerate(plan.cells, 1):
        table.add_row(str(i), pc.cell.key, "run" if pc.runnable else f"skip: {pc.skip_reason}")
    out_console.print(table)
    runnable = sum(pc.runnable for pc in plan.cells)
    out_console.print(f"{runnable} to run, {len(plan.cells) - runnable} skipped")


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
    from hpubench import matrix

    for name in matrix.PRESETS:
        spec = matrix.preset(name)
        out_console.print(f"{name}: {len(spec.grids)} grid(s)")


@app.command()
def env(workloads_from: FilesOpt = None) -> None:
    """What hpubench detects on this machine: accelerators, device names and counts."""
    with _launcher(workloads_from) as launcher:
        inventory, catalog = launcher.detect()
    table = Table(title=f"hpubench {__version__}: accelerators")
    table.add_column("accelerator")
    table.add_column("devices", justify="right")
    table.add_column("device name")
    for d in inventory.devices:
        table.add_row(d.accelerator, str(d.count), d.device_name or "-")
    out_console.print(table)
    out_console.print(f"workloads: {', '.join(catalog)}")


@app.command()
def results(
    paths: Annotated[list[Path], typer.Argument(help="Run directories or cells.jsonl files.")],
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
) -> None:
    """Print the results of one or more runs."""
    from hpubench.store import load_results, to_dataframe
    from hpubench.tables import results_table

    if fmt not in ("table", "csv", "json"):
        raise UsageError(f"--format must be table, csv or json, got {fmt!r}")
    loaded = load_results([str(p) for p in paths])
    if fmt == "table":
        out_console.print(results_table(loaded, title=", ".join(str(p) for p in paths)))
    elif fmt == "csv":
        sys.stdout.write(to_dataframe(loaded).to_csv(index=False))
    else:
        sys.stdout.write(to_dataframe(loaded).to_json(orient="records", indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Entry point: exit 2 with one line for any bad input, never a traceback for it."""
    try:
        code = app(args=argv, standalone_mode=False)  # returns typer.Exit's code instead of raising it
        if isinstance(code, int) and code:
            sys.exit(code)
    except UsageError as exc:
        err_console.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(2)
    except click_exc.NoArgsIsHelpError:
        sys.exit(0)
    except click_exc.UsageError as exc:
        hint = f"; see 'hpubench {exc.ctx.command_path.split(' ', 1)[-1]} --help'" if exc.ctx else ""
        msg = " ".join(exc.format_message().split())
        err_console.print(f"error: {msg}{hint}", highlight=False, markup=False, soft_wrap=True)
        sys.exit(2)
    except click_exc.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except click_exc.Exit as exc:
        sys.exit(exc.exit_code)
