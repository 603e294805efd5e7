"""``hpubench history``: each cell's throughput across saved baselines, as a self-contained HTML page.

A command of its own rather than ``report --history``: it reads saved baselines by name (not result
paths), orders them by commit, and takes the gate's settings (statistic, threshold, alpha) for the
verdicts between them, none of which ``report`` has; and ``report``'s own options (formats, prices,
epochs) mean nothing for a history. Registered on the main app as ``hpubench.present.cli.gate`` registers its
commands; like the rest of the CLI: parse, call, print.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from hpubench.errors import UsageError
from hpubench.present.cli.consoles import err_console, out_console
from hpubench.present.cli.gate import BaselineDir, parse_thresholds
from hpubench.present.outfile import check_suffix, check_target, write_output

if TYPE_CHECKING:  # numpy, through the gate
    from hpubench.analysis.history import History


def register(app: typer.Typer) -> None:
    """Add ``history`` to the main app."""

    @app.command()
    def history(
        names: Annotated[
            list[str] | None,
            typer.Argument(help="Saved baselines (names or run directories); default: every saved one."),
        ] = None,
        out: Annotated[
            Path, typer.Option("--out", "-o", help="HTML file to write (replaced atomically).")
        ] = Path("history.html"),
        order: Annotated[
            str,
            typer.Option(
                "--order",
                help="commit (by the commit's time, as git here knows it; the others by date), date (when "
                "each run started) or given (as listed).",
            ),
        ] = "commit",
        statistic: Annotated[
            str,
            typer.Option("--statistic", help="The gate's statistic for the verdicts: min, mean or median."),
        ] = "min",
        max_regression: Annotated[
            list[str] | None,
            typer.Option(
                "--max-regression", help="The gate's threshold, e.g. 5% (see 'hpubench gate --help')."
            ),
        ] = None,
        alpha: Annotated[float, typer.Option("--alpha", help="The gate's error rate per comparison.")] = 0.01,
        baseline_dir: BaselineDir = Path(".hpubench/baselines"),
    ) -> None:
        """Each cell's throughput across saved baselines in commit order, with intervals and the gate's
        verdict between each two consecutive baselines (what 'gate' would have said at each step)."""
        # deferred, as every command's work: the CLI starts without pandas, jinja2, plotly (reports) or
        # numpy (the gate, the history, the baselines)
        from hpubench.analysis import history as history_mod  # deferred: numpy
        from hpubench.analysis.gate import rules as gaterules  # deferred: numpy
        from hpubench.api import load_points  # deferred: numpy
        from reports.history import history_html  # deferred: pandas, jinja2, plotly

        check_suffix(out, ("html", "htm"))
        check_target(out)
        thresholds = parse_thresholds(max_regression)
        if not gaterules.MIN_ALPHA <= alpha < 1:
            raise UsageError(f"--alpha must be at least {gaterules.MIN_ALPHA:g} and below 1, got {alpha}")
        if order not in history_mod.ORDERS:
            raise UsageError(f"--order must be one of {', '.join(history_mod.ORDERS)}, got {order!r}")
        settings = gaterules.GateSettings(
            throughput_threshold=thresholds.get("throughput", gaterules.DEFAULT_THRESHOLD),
            memory_threshold=thresholds.get("memory", gaterules.DEFAULT_THRESHOLD),
            alpha=alpha,
            statistic=statistic,
            missing="ignore",
        )
        points = load_points(names or [], baseline_dir)
        h = history_mod.build(points, settings, order)
        write_output(out, history_html(h).encode())
        s = history_mod.summary(h)
        out_console.print(
            f"wrote {out}: {s['baselines']} baselines ({' -> '.join(p.name for p in h.points)}), "
            f"{s['cells']} cells, {s['regressions']} regression(s) and {s['improvements']} improvement(s) "
            f"between consecutive baselines, {s['change_points']} step(s) in level",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        _print_change_points(h)
        for note in h.notes:
            err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)


def _print_change_points(h: History) -> None:
    """The steps in level, one row each, with the method and its false-alarm rate."""
    from hpubench.analysis.changepoints import method_text  # deferred: numpy

    s = h.settings
    method = "change points: " + method_text(s.alpha, s.throughput_threshold, s.confidence)
    rows = [(c, sh) for c in h.cells for sh in c.changes.shown]
    if not rows:
        out_console.print(f"no step in any cell's throughput ({method})", highlight=False, markup=False)
        return
    table = Table(title=f"{len(rows)} step(s) in throughput over the baselines")
    for col in ("cell", "from", "to", "change", "interval", "p", "baselines"):
        table.add_column(col, justify="right" if col in ("change", "interval", "p", "baselines") else "left")
    for c, sh in rows:
        lo, hi = sh.interval
        table.add_row(
            c.key,
            h.points[sh.since].label,
            h.points[sh.at].label,
            f"{sh.change:+.1%}",
            f"[{lo:+.1%}, {hi:+.1%}]",
            f"{sh.p_value:.4f}",
            f"{sh.before} | {sh.after}",
        )
    out_console.print(table)
    out_console.print(method, highlight=False, markup=False, soft_wrap=True)
