"""``hpubench doctor``, registered on the main typer app: parse, call ``hpubench.api.diagnose``, print.

A command group of its own, as each is. Exit 1 when any finding FAILs, 0 otherwise; a
bad argument is a UsageError (one line, exit 2) like everywhere else.
"""

from __future__ import annotations

from typing import Annotated

import typer

from hpubench.measure import doctor as dr
from hpubench.present.cli.consoles import out_console


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the main app."""

    @app.command()
    def doctor(
        json_out: Annotated[
            bool, typer.Option("--json", help="Machine-readable findings and facts.")
        ] = False,
        matrix: Annotated[
            str, typer.Option("--matrix", "-m", help="Preset or .toml matrix whose skipped cells to explain.")
        ] = "full",
        from_run: Annotated[
            str | None,
            typer.Option(
                "--from",
                help="A run with tuned and plain cells (--condition tuned,plain): the measured tips for "
                "your own training.",
            ),
        ] = None,
    ) -> None:
        """Check this machine before benchmarking: torch, device frameworks and drivers, modes, visible
        devices, libraries (hccl, HLML, nccl, NVML), CPU governor, threads, free memory, and which cells of
        the matrix would be skipped and why, and what your own training gets against the tuned cells. Each
        finding is OK, WARN or FAIL with its fix; exit 1 on FAIL."""
        # deferred, as every command's work: api and the launcher pull numpy; the CLI starts without it
        from hpubench import api  # deferred: numpy (api)
        from hpubench.run.launch import Launcher  # deferred: numpy

        spec = api.resolve_spec(matrix, {})  # a bad --matrix is a usage error before anything starts
        paired = api.tuning_pairs(from_run) if from_run is not None else None  # a bad --from, likewise
        with Launcher() as launcher:
            findings, facts = api.diagnose(spec, launcher, paired, from_run)
        if json_out:
            typer.echo(dr.to_json(findings, facts))
        else:
            for line in dr.text_lines(findings):
                out_console.print(line, highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(dr.exit_code(findings))
