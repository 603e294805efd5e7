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

DEFAULT = "show"


class ResultsGroup(TyperGroup):
    """A group whose default subcommand is ``show`` (see the module docstring)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands:
            args = [DEFAULT, *args]
        return super().parse_args(ctx, args)


def register(results_app: typer.Typer, out_console: Any, err_console: Any) -> None:
    @results_app.command("merge")
    def merge(
        paths: Annotated[list[Path], typer.Argument(help="Run directories to merge (e.g. every shard's).")],
        out: Annotated[Path, typer.Option("--out", "-o", help="The new run directory to write.")],
    ) -> None:
        """Merge run directories (the shards of 'run --shard K/N') into one new run directory.

        Identical records are kept once; two different records of one cell are refused, naming the cell.
        Every input's metadata (host, inventory, command, shard) is kept in the new meta.json; report,
        compare, gate and baseline save read the merged directory as any run."""
        from hpubench.store.mergerun import merge_dirs  # on use, as every command's work: a fast CLI start

        merged = merge_dirs(paths, out, ["hpubench", *sys.argv[1:]])
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
