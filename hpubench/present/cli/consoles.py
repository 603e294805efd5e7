"""Where the command line prints: one console for results (stdout), one for progress and notes (stderr),
and the observation tables that both ``run`` and ``results show`` print after their results.

A module of its own because every command module prints through the same two consoles.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:  # the record's modules are not loaded on start
    from hpubench.store.record import CellResult


def piped_width() -> int:
    """Piped output (CI logs, files) is 240 columns wide, not rich's 80, so keys stay whole; COLUMNS wins."""
    raw = os.environ.get("COLUMNS", "")
    wide = raw.isascii() and raw.isdigit()  # "²" is a digit to str.isdigit, not to int()
    return int(raw) if wide and int(raw) >= 40 else 240


def drop_unreadable_terminal_size(environ: MutableMapping[str, str]) -> None:
    """Remove COLUMNS and LINES where they hold digits that are not ASCII ("²"): rich, ours and typer's help
    alike, tests them with str.isdigit and then fails in int() on every command. Without them a console
    takes the terminal's own size."""
    for name in ("COLUMNS", "LINES"):
        raw = environ.get(name)
        if raw is not None and raw.isdigit() and not raw.isascii():
            del environ[name]


drop_unreadable_terminal_size(os.environ)  # before any console below or in typer reads them
# emoji=False: names print as written ("hf:llama: tiny" must not become a llama emoji).
out_console = Console(emoji=False) if sys.stdout.isatty() else Console(emoji=False, width=piped_width())
err_console = Console(stderr=True, emoji=False)
if not sys.stderr.isatty():
    err_console = Console(stderr=True, emoji=False, width=piped_width())


def print_observations(results: Sequence[CellResult], run_dir: Path | None) -> None:
    """Operator tables, memory timelines, loader splits and energy, for the cells that have them."""
    # deferred: hpubench.present.tables pulls numpy; the CLI starts (and prints --help) without it
    from hpubench.present.tables import absent_telemetry_notes, observation_tables

    for table in observation_tables(results, None if run_dir is None else str(run_dir)):
        out_console.print(table)
    for line in absent_telemetry_notes(results):
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)


def print_tuning(results: Sequence[CellResult]) -> None:
    """Each configuration measured under both conditions: the tuned figure beside what a plain script
    gets, and the settings worth copying into the user's own training, with their measured cost."""
    from hpubench.analysis.tuning import summary_lines, tunings  # deferred as above (pandas via compare)

    lines = summary_lines(tunings(results))
    if lines:
        out_console.print("tuned (the harness's host settings) vs plain (what a plain script gets):")
    for line in lines:
        out_console.print(line, highlight=False, markup=False, soft_wrap=True)
