"""The typer options the commands share, and those made from the dimension declarations.

Each option is an ``Annotated`` type (``MatrixOpt``, ``StepsOpt``, ...) declared once here, so a flag reads
and defaults the same in every command that takes it (``run`` and ``profile``, ``list cells``, ``report``
and ``compare``...).

A command that takes matrix dimensions declares one parameter ``dims`` and is decorated with
:func:`dimension_options`; typer then sees, in the place of ``dims``, one option per dimension of
``hpubench.plan.dimensions`` (its flags, its help), and the command receives them back as
``dims: dict[str, list[str] | None]`` (name -> the flag's strings, None where not given), ready for
``cliparse.parse_dimensions``. A dimension registered by a plugin appears in ``--help`` with no change here.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from hpubench.errors import UsageError
from hpubench.plan import dimensions
from hpubench.plan.autosteps import AutoSteps
from hpubench.plan.cliparse import parse_dimensions
from hpubench.plugins.files import DEFAULT_LIMIT_S

F = TypeVar("F", bound=Callable[..., Any])
_PREFIX = "dim_"  # parameter names; typer shows the flags, so a dimension cannot clash with "out", ...


def dimension_options(func: F) -> F:
    """Replace ``func``'s ``dims`` parameter by one option per dimension (see the module docstring).

    Calling the decorated function directly with ``dims=...`` (as ``profile`` calls ``run``) passes it on.
    """
    try:
        dims = dimensions.all_dimensions()
    except UsageError:  # a broken plugin: the command reports it as one line when it parses its flags
        dims = dimensions.BUILTIN
    sig = inspect.signature(func, eval_str=True)
    params = list(sig.parameters.values())
    at = [p.name for p in params].index("dims")
    options = [
        inspect.Parameter(
            _PREFIX + d.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=None,
            annotation=Annotated[list[str] | None, typer.Option(*d.cli_flags, help=d.help)],
        )
        for d in dims
    ]
    new = [*params[:at], *options, *params[at + 1 :]]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "dims" not in kwargs:
            kwargs["dims"] = {d.name: kwargs.pop(_PREFIX + d.name, None) for d in dims}
        return func(*args, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=new)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in new}
    return wrapper  # type: ignore[return-value]


def dimension_overrides(
    dims: dict[str, list[str] | None],
    steps: str | None = None,
    warmup: int | None = None,
    auto: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """The ``dims`` a :func:`dimension_options` command received (and its step flags) as spec overrides."""
    return parse_dimensions(**dims, steps=steps, warmup_steps=warmup, auto=auto)


def flag_options(cls: type) -> Callable[[Callable[[Any], Any]], Callable[..., Any]]:
    """Declare a command's flags once, as the fields of dataclass ``cls``; the command takes one ``cls``.

    typer sees one parameter per field (its ``Annotated`` option and default, in field order, which is
    the order of ``--help``), so a command with thirty flags keeps a short body that hands ``flags`` to
    its helpers rather than thirty names. Calling the decorated command with keyword arguments (as
    ``profile`` calls ``run``) builds ``cls`` from them. With a ``dims`` field, put
    :func:`dimension_options` above this decorator.
    """
    hints = typing.get_type_hints(cls, include_extras=True)
    params = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default,
            annotation=hints[f.name],
        )
        for f in dataclasses.fields(cls)
    ]

    def decorate(func: Callable[[Any], Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return func(cls(*args, **kwargs))

        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide", help="Every column and whole cell keys, however wide the terminal (default: fit it)."
    ),
]

DEFAULT_TIMEOUT_S = 900.0

MatrixOpt = Annotated[
    str | None, typer.Option("--matrix", "-m", help="Preset (smoke, full) or a .toml matrix file.")
]
# The dimension options (--workload, --size, ...) come from hpubench.plan.dimensions via @dimension_options.
DimsOpt = dict[str, list[str] | None] | None
StepsOpt = Annotated[
    str | None,
    typer.Option(
        "--steps",
        help="Measured steps per cell: a number (exact), or 'auto': measure in rounds until the throughput "
        "interval's half-width is within --target-ci, between --min-steps/--min-time and --max-time.",
    ),
]
TargetCiOpt = Annotated[
    str | None,
    typer.Option("--target-ci", help="--steps auto: interval half-width to reach, relative (default 2%)."),
]
AUTO_DEFAULTS = AutoSteps()  # the --help texts quote the defaults from the one place they are set
MinStepsOpt = Annotated[
    str | None,
    typer.Option("--min-steps", help=f"--steps auto: steps at least (default {AUTO_DEFAULTS.min_steps})."),
]
MinTimeOpt = Annotated[
    str | None,
    typer.Option(
        "--min-time", help=f"--steps auto: seconds measured at least (default {AUTO_DEFAULTS.min_time_s:g})."
    ),
]
MaxTimeOpt = Annotated[
    str | None,
    typer.Option(
        "--max-time",
        help=f"--steps auto: seconds measured per cell at most (default {AUTO_DEFAULTS.max_time_s:g}).",
    ),
]
WarmOpt = Annotated[int | None, typer.Option("--warmup-steps", help="Warm-up steps per cell (excluded).")]
FilesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--workloads-from",
        help="Python file(s) registering workloads; each import may take HPUBENCH_PLUGIN_IMPORT_TIMEOUT "
        f"seconds (default {DEFAULT_LIMIT_S:g}).",
    ),
]
# What to observe beside the figures (hpubench.plan.runoptions); none of these changes a cell or its key.
TelemetryOpt = Annotated[
    bool,
    typer.Option(
        "--telemetry/--no-telemetry",
        help="Sample power/energy during the measured steps (HLML on HPU, NVML on CUDA, RAPL on CPU); "
        "absent sources are recorded as absent.",
    ),
]
TelemetryIntervalOpt = Annotated[
    float, typer.Option("--telemetry-interval", help="Seconds between telemetry polls.")
]
MemoryEveryOpt = Annotated[
    int,
    typer.Option(
        "--memory-every",
        help="Memory timeline: sample device memory after every warm-up step and every K-th measured "
        "step (0 = off).",
    ),
]
LoaderOpt = Annotated[
    str,
    typer.Option(
        "--loader",
        help="device (batches already on the device) or host: also time a pass fed by a host-side "
        "loader, data wait vs compute per step.",
    ),
]
EnergyPriceOpt = Annotated[
    float | None,
    typer.Option("--energy-price", help="Electricity price per kWh, for energy cost figures (no default)."),
]
ProfileWaitOpt = Annotated[int, typer.Option("--wait", help="Profiler schedule: steps before tracing.")]
ProfileWarmOpt = Annotated[
    int, typer.Option("--warmup", help="Profiler schedule: traced-but-discarded steps (profiler start-up).")
]
ProfileActiveOpt = Annotated[
    int, typer.Option("--active", help="Profiler schedule: steps traced and tabled.")
]
TopOpt = Annotated[int, typer.Option("--top", help="Rows in the operator table.")]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue a run: only cells without a result run.")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="Seconds before a cell is killed.")]
EstimatesFromOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--estimates-from",
        help="Earlier run directories: estimate cells with the same key from their measured step times "
        "(otherwise from FLOPs and a matmul rate calibrated here).",
    ),
]
BudgetOpt = Annotated[
    str | None,
    typer.Option(
        "--budget",
        help="Wall-time budget for the whole run, e.g. 90s, 60m, 2h: steps per cell are chosen to fit "
        "(at least 1 warm-up + 2 steps), cells that cannot fit are skipped up front with their estimate, "
        "and the run ends within the budget + 10%.",
    ),
]
ShardOpt = Annotated[
    str | None,
    typer.Option(
        "--shard",
        help="Run shard K of N (1/3, 2/3, 3/3: numbered from 1) of the cells, balanced by FLOPs at a nominal "
        "rate; default: from a Slurm job array (SLURM_ARRAY_TASK_ID/COUNT/MIN) or a Kubernetes Indexed Job "
        "(JOB_COMPLETION_INDEX, with HPUBENCH_SHARD_COUNT), 1/1 = every cell. "
        "Merge the shards with 'hpubench results merge'.",
    ),
]
IsolationOpt = Annotated[
    str,
    typer.Option(
        "--isolation",
        help="fork (each cell forked from a pre-warmed server that imported torch once: it starts at once, "
        "and inherits that server's imported state) or spawn (a fresh interpreter per cell, as a script "
        "starts: `import torch` is paid for every cell; also for stacks where forking after import is "
        "unsafe). A record's runtime dispatch_to_first_step_s says what a cell's start cost.",
    ),
]


# Multi-node (hpubench.run.cluster): each overrides its environment variable on this node.
NodeRankOpt = Annotated[
    int | None,
    typer.Option(
        "--node-rank", help="This node's index, 0 on the node hosting the rendezvous (env NODE_RANK)."
    ),
]
MasterAddrOpt = Annotated[
    str | None,
    typer.Option("--master-addr", help="Node 0's address, needed on other nodes (env MASTER_ADDR)."),
]
MasterPortOpt = Annotated[
    int | None,
    typer.Option("--master-port", help="A free TCP port on node 0 for the rendezvous (env MASTER_PORT)."),
]

PricesOpt = Annotated[
    Path | None,
    typer.Option("--prices", help="TOML file that overrides or extends the price and peak tables."),
]
