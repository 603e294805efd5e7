"""``hpubench report`` and ``hpubench compare``: result sets in, an HTML page (or a table file) out.

Both hand the work to the ``reports`` package (pandas, jinja2, plotly, loaded only when one of them runs)
and print a summary of what was written. Like the rest of the CLI: parse, call, print.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hpubench.present.cli.consoles import err_console, out_console
from hpubench.present.cli.options import PricesOpt, WideOpt


def register(app: typer.Typer) -> None:
    """Add ``report`` and ``compare`` to the main app."""
    app.command()(report)
    app.command()(compare)


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
    import reports  # deferred: pandas, jinja2 and plotly are heavy; the CLI starts without them

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
    # deferred: reports pulls pandas, jinja2 and plotly, the compare view numpy; the CLI starts without them
    import reports  # deferred: pandas, jinja2, plotly
    from hpubench.present.narrowcompare import compare_view  # deferred: numpy

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
