"""``hpubench results``: show one or more runs (``results DIR...``, as always) and ``results merge``.

``results`` was one command taking paths; ``merge`` joins it as a subcommand without changing how the
old form reads: :class:`ResultsGroup` runs ``show`` whenever the first word is not a subcommand's name
(``hpubench results run1 --format csv`` is ``hpubench results show run1 --format csv``, and
``hpubench results --help`` is show's help, which names merge). A run directory literally named
``merge`` is reached as ``./merge``. Like the rest of the CLI: parse, call, print.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from hpubench.errors import UsageError
from hpubench.plan.cliparse import out_dir
from hpubench.present.cli.consoles import err_console, out_console, print_observations, print_tuning
from hpubench.present.cli.options import WideOpt

DEFAULT = "show"


class ResultsGroup(TyperGroup):
    """A group whose default subcommand is ``show`` (see the module docstring)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands:
            args = [DEFAULT, *args]
        return super().parse_args(ctx, args)


def register(results_app: typer.Typer) -> None:
    """Add ``show`` (the default) and ``merge`` to the ``results`` group."""
    results_app.command("show")(show)
    results_app.command("merge")(merge)


def show(
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
    # deferred, as every command's work: the table view pulls numpy, the record readers about 40 ms of
    # modules (pandas itself stays deferred inside the frame builder); the CLI starts without them
    from hpubench.present.export import results_frame  # deferred: the record modules; pandas itself on use
    from hpubench.present.narrowtable import results_view  # deferred: numpy
    from hpubench.store.readback import load_results  # deferred: the record modules, ~40 ms

    if fmt not in ("table", "csv", "json"):
        raise UsageError(f"--format must be table, csv or json, got {fmt!r}")
    loaded = load_results([str(p) for p in paths])
    if fmt == "table":
        out_console.print(
            *results_view(loaded, ", ".join(str(p) for p in paths), out_console.width, wide), sep="\n"
        )
        if profile:
            print_observations(loaded, paths[0] if len(paths) == 1 and paths[0].is_dir() else None)
        print_tuning(loaded)
    elif fmt == "csv":
        sys.stdout.write(results_frame(loaded).to_csv(index=False))
    else:
        sys.stdout.write(results_frame(loaded).to_json(orient="records", indent=1) + "\n")


def merge(
    paths: Annotated[list[Path], typer.Argument(help="Run directories to merge (e.g. every shard's).")],
    out: Annotated[str, typer.Option("--out", "-o", help="The new run directory to write.")],
) -> None:
    """Merge run directories (the shards of 'run --shard K/N') into one new run directory.

    Identical records are kept once; two different records of one cell are refused, naming the cell.
    Every input's metadata (host, inventory, command, shard) is kept in the new meta.json; report,
    compare, gate and baseline save read the merged directory as any run."""
    # deferred, as every command's work: the record modules (about 40 ms) load only when used
    from hpubench.store.mergerun import merge_dirs

    target = out_dir(out)  # refuses an empty -o, which would write the run into the current directory
    assert target is not None  # -o is required
    merged = merge_dirs(paths, target, ["hpubench", *sys.argv[1:]])
    cells = len({r.key for r in merged.records})
    hosts = merged.meta["merged"]["hosts"]
    out_console.print(
        f"merged {len(paths)} run(s) from {len(hosts)} host(s) -> {out}: {len(merged.records)} record(s) "
        f"of {cells} cell(s)"
        + (f", {merged.duplicates} identical duplicate(s) dropped" if merged.duplicates else ""),
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    for note in merged.notes:
        err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
