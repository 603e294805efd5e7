"""Command line: the typer app, its groups, and the entry point. No logic lives here.

Each command group lives in a module named for it and registers its commands here: ``run``/``profile``
(runcmd), ``env`` and ``list ...`` (listing), ``report``/``compare`` (reporting), ``gate``/``export``/
``baseline ...`` (gate), ``doctor``, ``results show|merge`` (results), ``history``, ``bisect``. ``--help``
lists the commands in the order they are registered, then the groups in the order they are added.

Every bad input ends as one line on stderr and exit code 2: click's own usage errors are caught and
flattened too, so a pipeline never has to parse a usage box or a traceback.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

try:  # recent typer releases vendor click; older ones use the click package
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exc

from hpubench import __version__
from hpubench.errors import UsageError
from hpubench.present.cli import bisect, doctor, gate, history, listing, reporting, results, runcmd
from hpubench.present.cli.consoles import err_console, out_console
from hpubench.run import interrupt

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
results_app = typer.Typer(
    cls=results.ResultsGroup,
    rich_markup_mode=HELP_STYLE,
    help="Print the results of one or more runs ('results merge': join shards' run directories).",
)
app.add_typer(results_app, name="results")


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


runcmd.register(app)  # run, profile
listing.register(app, list_app)  # env; list cells|workloads|presets
reporting.register(app)  # report, compare
gate.register(app)  # gate, baseline save|list, export
doctor.register(app)  # doctor
results.register(results_app)  # results show|merge
history.register(app)  # history
bisect.register(app)  # bisect


def main(argv: list[str] | None = None) -> None:
    """Entry point: exit 2 with one line for any bad input, never a traceback for it."""
    try:
        with interrupt.sigterm_raises():  # SIGTERM unwinds like Ctrl-C: children stopped, scratch removed
            # standalone_mode=False: returns typer.Exit's code instead of raising it
            code = app(args=argv, prog_name="hpubench", standalone_mode=False)
        if code == interrupt.SIGINT_EXIT:  # typer's code for a Ctrl-C or SIGTERM outside a run's loop
            err_console.print("interrupted")
            sys.exit(interrupt.SIGTERM_EXIT if interrupt.was_terminated() else code)
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
