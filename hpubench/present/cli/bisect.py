"""``hpubench bisect GOOD BAD [bisect options] [-- run options]``: the first commit at which the chosen cells
got slower (or started failing), with the evidence. Parse, call ``hpubench.run.bisect``, print.

Every option that is not bisect's own goes to each ``hpubench run`` as written (``--`` ends bisect's).
Exit codes: 0 when a commit is named, 1 when the runs could not name one (insufficient evidence, or only
commits whose set-up failed stand between), 2 for bad input (including no regression between GOOD and
BAD), 130 or 143 when interrupted (run the same command again to resume).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from hpubench.errors import UsageError
from hpubench.plan.cliparse import out_dir
from hpubench.present.cli.consoles import err_console, out_console
from hpubench.present.cli.gate import parse_thresholds
from hpubench.run import interrupt

if TYPE_CHECKING:  # the gate pulls numpy; the CLI starts without it
    from hpubench.run.bisect.session import Outcome, Request

EXIT_NOT_NAMED = 1
HELP = (
    "Find the first commit between GOOD and BAD at which the chosen cells got slower or started failing. "
    "Each commit is checked out in a temporary git worktree (your working tree is not touched), set up "
    "with --setup, and run interleaved with GOOD; the gate's estimator decides. Options after '--' (and "
    "any not listed here) go to every 'hpubench run': the matrix and dimension options, --steps, "
    "--workloads-from (relative paths are read from the repository root at each commit). Run the same "
    "command again to resume. Exit 0: a commit named; 1: insufficient evidence; 2: bad input or no "
    "regression between GOOD and BAD."
)


def register(app: typer.Typer) -> None:
    """Add ``bisect`` to the main app."""
    settings = {"allow_extra_args": True, "ignore_unknown_options": True}
    app.command("bisect", help=HELP, context_settings=settings)(bisect)


def bisect(
    ctx: typer.Context,
    good: Annotated[str, typer.Argument(help="A commit (branch, tag) at which the cells were fast.")],
    bad: Annotated[str, typer.Argument(help="A later commit at which they were slower (the gate fails).")],
    setup: Annotated[
        str | None,
        typer.Option(
            "--setup",
            help="Shell command run in each commit's worktree before its runs (e.g. 'make'); a commit "
            "whose set-up fails is skipped. The worktree is first on PYTHONPATH, so pure-Python code "
            "needs none; an install into the shared environment would make GOOD's runs use it too.",
        ),
    ] = None,
    repeat: Annotated[
        int, typer.Option("--repeat", help="Interleaved rounds per tested commit (each runs it and GOOD).")
    ] = 3,
    out: Annotated[
        str | None,
        typer.Option(
            "--out", "-o", help="Bisect directory: state, runs, logs (default results/bisect-GOOD-BAD)."
        ),
    ] = None,
    max_regression: Annotated[
        list[str] | None, typer.Option("--max-regression", help="The gate's threshold for BAD, e.g. 5%.")
    ] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="The gate's error rate per decision.")] = 0.01,
    statistic: Annotated[
        str, typer.Option("--statistic", help="The gate's statistic per run: min, mean or median.")
    ] = "min",
) -> None:
    # deferred: the gate's numpy and the session's modules; the CLI starts without them
    from hpubench.analysis.gate.rules import DEFAULT_THRESHOLD, GateSettings
    from hpubench.run.bisect.request import prepare
    from hpubench.run.bisect.session import run
    from hpubench.run.bisect.state import open_state
    from hpubench.store import runlock

    run_args = list(ctx.args)
    _check_run_options(ctx, run_args)
    thresholds = parse_thresholds(max_regression)
    gate_settings = GateSettings(
        throughput_threshold=thresholds.get("throughput", DEFAULT_THRESHOLD),
        alpha=alpha,
        statistic=statistic,
        missing="ignore",
        same_flops=False,  # a commit that made the model do more work is one bisect must find
    )
    req = prepare(Path.cwd(), good, bad, run_args, setup, repeat, out_dir(out), gate_settings)
    # Read once before the claim, so a refused directory is left as it was (lock file included), and
    # again under the lock, which another bisect may have taken in between.
    open_state(req.out, req.good.sha, req.bad.sha, req.run_args, req.setup)
    runlock.acquire(req.out)
    try:
        state = open_state(req.out, req.good.sha, req.bad.sha, req.run_args, req.setup)
    except UsageError:
        runlock.abandon(req.out)  # removes only what the claim made
        raise
    _say(f"bisect {req.good.short}..{req.bad.short}: {len(req.candidates)} commit(s) -> {req.out}")
    try:
        outcome = run(req, state, _say)
    except KeyboardInterrupt as exc:
        raise interrupt.RunInterrupted(
            f"interrupted: the bisect's runs so far are kept in {req.out}; resume with the same command",
            interrupt.exit_code(exc),
        ) from None
    _print(req, outcome)
    if outcome.first_bad is None:
        raise typer.Exit(EXIT_NOT_NAMED)


def _check_run_options(ctx: typer.Context, run_args: list[str]) -> None:
    """Parse the run options as 'hpubench run' would, so a typo is refused before anything is checked out."""
    group = ctx.parent.command if ctx.parent is not None else None
    run_cmd = group.get_command(ctx.parent, "run") if group is not None else None  # type: ignore[attr-defined]
    if run_cmd is not None:
        run_cmd.make_context("hpubench run", list(run_args), parent=ctx.parent)


def _say(line: str) -> None:
    err_console.print(line, highlight=False, markup=False, soft_wrap=True)


def _ratio_text(ratio: float | None, interval: tuple[float, float] | None) -> tuple[str, str]:
    if ratio is None:
        return "-", "-"
    iv = "-" if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}]"
    return f"{ratio:.3f}", iv


def _print(req: Request, outcome: Outcome) -> None:
    table = Table(
        title=f"bisect {req.good.short}..{req.bad.short}: throughput against GOOD's interleaved runs"
    )
    for col in ("commit", "subject", "cell", "ratio", "interval", "runs", "call"):
        table.add_column(col, justify="right" if col in ("ratio", "interval", "runs") else "left")
    for t in outcome.tested:
        if not t.evidence:
            call = f"{t.call} ({t.note})" if t.note else t.call  # a skipped commit: why its set-up failed
            table.add_row(t.commit.short, t.commit.subject[:50], "-", "-", "-", "-", call, end_section=True)
            continue
        for i, e in enumerate(t.evidence):
            ratio, iv = _ratio_text(e.ratio, e.interval)
            first = i == 0
            table.add_row(
                t.commit.short if first else "",
                t.commit.subject[:50] if first else "",
                e.key,
                ratio,
                iv,
                f"{e.runs[0]}+{e.runs[1]}",
                f"{e.call} ({e.why})",
                end_section=i == len(t.evidence) - 1,
            )
    out_console.print(table)
    followed = ", ".join(
        f"{f.key} ({f.kind}, BAD at {f.bad_ratio:.3f}x)" if f.bad_ratio else f"{f.key} ({f.kind})"
        for f in outcome.followed
    )
    _plain(f"followed: {followed or '-'}; ratio: throughput / GOOD's, interval at the gate's alpha")
    if outcome.first_bad is not None:
        c = outcome.first_bad
        _plain(f"first bad commit: {c.sha} {c.subject}")
    elif outcome.between:
        shas = ", ".join(c.short for c in outcome.between)
        _plain(f"the first bad commit is one of {shas}: the set-up failed at all but the last")
    else:
        _plain(outcome.stopped or "no commit named")
    _plain(
        f"{outcome.runs} runs measured {outcome.cell_runs} cells in all; this session took "
        f"{outcome.wall_s:.0f} s (state and runs: {req.out})"
    )


def _plain(line: str) -> None:
    out_console.print(line, highlight=False, markup=False, soft_wrap=True)
