"""What hpubench would do or can see, without running a cell: ``list cells|workloads|presets`` and ``env``.

Separate from ``run`` (:mod:`hpubench.present.cli.runcmd`): these only detect, plan and estimate, then
print. Like the rest of the CLI: parse, call hpubench.api, print.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from hpubench import __version__
from hpubench.errors import UsageError
from hpubench.measure.heap import check_heap_env
from hpubench.plan.modeldirs import with_model_dirs
from hpubench.present.cli.consoles import out_console
from hpubench.present.cli.options import (
    BudgetOpt,
    DimsOpt,
    EstimatesFromOpt,
    FilesOpt,
    MatrixOpt,
    dimension_options,
    dimension_overrides,
)
from hpubench.present.envtable import env_table


def register(app: typer.Typer, list_app: typer.Typer) -> None:
    """Add ``list cells|workloads|presets`` to the ``list`` group and ``env`` to the main app."""
    list_app.command("cells")(list_cells)
    list_app.command("workloads")(list_workloads)
    list_app.command("presets")(list_presets)
    app.command()(env)


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
    # deferred, as every command's work: api and the estimates pull numpy; the CLI starts without it
    from hpubench import api  # deferred: numpy (api)
    from hpubench.accelerators import check_environment  # deferred: the accelerator registry, ~30 ms
    from hpubench.present.cli import estimate as cli_estimate  # deferred: numpy (plan.preflight)

    started = cli_estimate.now()
    budget_s = cli_estimate.parse_budget(budget)
    if repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {repeat}")
    # The estimates are made under the cells' own settings (a CPU rank's threads follow
    # HPUBENCH_CPU_THREADS), so a bad one is refused here as `run` refuses it.
    check_environment(os.environ)
    check_heap_env(os.environ)

    dims, workloads_from = with_model_dirs(dims, workloads_from)
    spec = api.resolve_spec(matrix, dimension_overrides(dims))
    with api.open_launcher(workloads_from) as launcher:
        _plan, pre = cli_estimate.estimate(api.make_plan(spec, launcher), launcher, estimates_from)
    first = None
    if budget_s is not None:
        first = cli_estimate.start_budget(pre, budget_s, repeat, started).plan_from(0, 0)
    title = f"matrix {spec.name}: {len(pre.cells)} cells"
    table, lines = cli_estimate.estimate_table(pre, title, first, repeat, budget_s, show_skipped=skipped)
    out_console.print(table)
    for line in lines:
        out_console.print(line, highlight=False, markup=False, soft_wrap=True)


def list_workloads(workloads_from: FilesOpt = None) -> None:
    """Registered workloads (built-in, entry points, --workloads-from files) and their sizes."""
    from hpubench import api  # deferred: pulls numpy; the CLI starts without it

    with api.open_launcher(workloads_from) as launcher:
        _inventory, catalog = launcher.detect()
    for name, sizes in catalog.items():
        out_console.print(f"{name}: {', '.join(sizes)}")


def list_presets() -> None:
    """The built-in matrix presets."""
    from hpubench.plan import matrix  # deferred: the matrix parser and tomllib load only when used

    for name in matrix.PRESETS:
        spec = matrix.preset(name)
        out_console.print(f"{name}: {len(spec.grids)} grid(s)")


def env(workloads_from: FilesOpt = None) -> None:
    """What hpubench detects on this machine: accelerators, device names and counts."""
    from hpubench import api  # deferred: pulls numpy; the CLI starts without it

    with api.open_launcher(workloads_from) as launcher:
        inventory, catalog = launcher.detect()
    out_console.print(env_table(inventory, f"hpubench {__version__}: accelerators"))
    out_console.print(f"workloads: {', '.join(catalog)}")
