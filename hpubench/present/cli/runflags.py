"""``hpubench run``'s flags as one value: :class:`RunFlags`, a dataclass whose fields are the options.

``run`` takes more than thirty flags. Declared as parameters they made the command a 180-line function
that then passed each flag by name to the code it calls; declared here once, typer still sees one option
per field (:func:`hpubench.present.cli.options.flag_options`, in field order: the order of ``--help``),
while ``run`` and its helpers pass one ``RunFlags`` along. The shared options come from
:mod:`hpubench.present.cli.options`; those only ``run`` takes are declared here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from hpubench.plan.runoptions import ProfileOptions, RunOptions
from hpubench.present.cli.options import (
    DEFAULT_TIMEOUT_S,
    BudgetOpt,
    DimsOpt,
    EnergyPriceOpt,
    EstimatesFromOpt,
    FilesOpt,
    IsolationOpt,
    LoaderOpt,
    MasterAddrOpt,
    MasterPortOpt,
    MatrixOpt,
    MaxTimeOpt,
    MemoryEveryOpt,
    MinStepsOpt,
    MinTimeOpt,
    NodeRankOpt,
    ResumeOpt,
    ShardOpt,
    StepsOpt,
    TargetCiOpt,
    TelemetryIntervalOpt,
    TelemetryOpt,
    TimeoutOpt,
    WarmOpt,
    WideOpt,
)
from hpubench.run.eta import PLAIN_EVERY_S

RepeatOpt = Annotated[
    int,
    typer.Option(
        "--repeat",
        help="Run the whole matrix N times (passes interleaved); each record keeps its repeat index, "
        "so 'hpubench gate' can use between-run variance.",
    ),
]
RunOutOpt = Annotated[str | None, typer.Option("--out", "-o", help="Run directory (default results/<time>).")]
ProfileFlagOpt = Annotated[
    bool, typer.Option("--profile", help="Also profile every cell (as 'hpubench profile' does).")
]
# Hidden: 'hpubench profile' sets these through run (its own flags, with help, are --wait, --top, ...).
ProfileWaitHiddenOpt = Annotated[int, typer.Option("--profile-wait", hidden=True)]
ProfileWarmupHiddenOpt = Annotated[int, typer.Option("--profile-warmup", hidden=True)]
ProfileActiveHiddenOpt = Annotated[int, typer.Option("--profile-active", hidden=True)]
TopHiddenOpt = Annotated[int, typer.Option("--top", hidden=True)]
RecordShapesHiddenOpt = Annotated[bool, typer.Option("--record-shapes", hidden=True)]
ProgressEveryOpt = Annotated[float, typer.Option("--progress-every", hidden=True)]


@dataclass(frozen=True)
class RunFlags:
    """Every flag of ``hpubench run``, in the order ``--help`` lists them (``dims``: the dimension
    options, expanded by :func:`~hpubench.present.cli.options.dimension_options`)."""

    matrix: MatrixOpt = None
    dims: DimsOpt = None
    steps: StepsOpt = None
    target_ci: TargetCiOpt = None
    min_steps: MinStepsOpt = None
    min_time: MinTimeOpt = None
    max_time: MaxTimeOpt = None
    warmup_steps: WarmOpt = None
    repeat: RepeatOpt = 1
    out: RunOutOpt = None
    resume: ResumeOpt = False
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S
    isolation: IsolationOpt = "fork"
    workloads_from: FilesOpt = None
    node_rank: NodeRankOpt = None
    master_addr: MasterAddrOpt = None
    master_port: MasterPortOpt = None
    telemetry: TelemetryOpt = True
    telemetry_interval: TelemetryIntervalOpt = 0.1
    memory_every: MemoryEveryOpt = 0
    loader: LoaderOpt = "device"
    energy_price: EnergyPriceOpt = None
    profile: ProfileFlagOpt = False
    profile_wait: ProfileWaitHiddenOpt = 1
    profile_warmup: ProfileWarmupHiddenOpt = 1
    profile_active: ProfileActiveHiddenOpt = 3
    top: TopHiddenOpt = 20
    record_shapes: RecordShapesHiddenOpt = False
    progress_every: ProgressEveryOpt = PLAIN_EVERY_S
    budget: BudgetOpt = None
    estimates_from: EstimatesFromOpt = None
    shard: ShardOpt = None
    wide: WideOpt = False

    def run_options(self) -> RunOptions:
        """What to observe beside the figures (profiler, telemetry, memory timeline, loader, price)."""
        profile = self.profile_wait, self.profile_warmup, self.profile_active, self.top, self.record_shapes
        return RunOptions(
            profile=ProfileOptions(*profile) if self.profile else None,
            telemetry=self.telemetry,
            telemetry_interval_s=self.telemetry_interval,
            memory_every=self.memory_every,
            loader=self.loader,
            energy_price_per_kwh=self.energy_price,
        )

    def auto_steps(self) -> dict[str, str | None]:
        """The ``--steps auto`` flags, as ``dimension_overrides`` takes them."""
        return {
            "target_ci": self.target_ci,
            "min_steps": self.min_steps,
            "min_time": self.min_time,
            "max_time": self.max_time,
        }
