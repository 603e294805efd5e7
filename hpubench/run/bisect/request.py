"""Turning ``hpubench bisect``'s arguments into a :class:`~hpubench.run.bisect.session.Request`, refusing
what cannot be bisected before anything is checked out or run: not a git repository, an unknown revision,
GOOD not an ancestor of BAD, uncommitted changes, run options that bisect itself sets."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hpubench.analysis.gate.rules import GateSettings
from hpubench.errors import UsageError
from hpubench.plan.cliparse import check_repeat
from hpubench.run.bisect import gitrepo
from hpubench.run.bisect.session import Request

# 'hpubench run' options bisect sets for every run (or that would make its runs incomparable)
OWNED_OPTIONS = (
    "--out",
    "-o",
    "--repeat",
    "--resume",
    "--shard",
    "--node-rank",
    "--master-addr",
    "--master-port",
)


def check_run_args(run_args: Sequence[str]) -> None:
    for token in run_args:
        name = token.split("=", 1)[0]
        if name in OWNED_OPTIONS:
            raise UsageError(
                f"{name} is bisect's to set for each run; fix: drop it from the run options "
                "(bisect's own --out and --repeat say where and how often)"
            )


def repo_relative(run_args: Sequence[str], repo: Path) -> list[str]:
    """Absolute paths inside the repository made relative to its root, so that each commit's runs read
    the file as it is at that commit (relative paths are already read from each worktree's root)."""
    out = []
    for token in run_args:
        p = Path(token)
        if p.is_absolute() and p.resolve().is_relative_to(repo.resolve()):
            token = str(p.resolve().relative_to(repo.resolve())) or "."
        out.append(token)
    return out


def prepare(
    where: Path,
    good: str,
    bad: str,
    run_args: Sequence[str],
    setup: str | None,
    repeat: int,
    out: Path | None,
    settings: GateSettings,
) -> Request:
    """The checked request; ``out`` defaults to ``results/bisect-GOOD-BAD`` (short hashes) under ``where``."""
    check_repeat(repeat, 2)  # at least 2: runs a side for the gate's test
    if setup is not None and not setup.strip():
        raise UsageError("--setup is empty; fix: give a shell command, or leave --setup out")
    check_run_args(run_args)
    repo = gitrepo.toplevel(where)
    g = gitrepo.resolve(repo, good, "GOOD")
    b = gitrepo.resolve(repo, bad, "BAD")
    cands = gitrepo.candidates(repo, g, b)
    gitrepo.check_clean(repo)
    return Request(
        repo=repo,
        good=g,
        bad=b,
        candidates=tuple(cands),
        run_args=tuple(repo_relative(run_args, repo)),
        setup=setup,
        repeat=repeat,
        # absolute: every run's working directory is a worktree
        out=(out if out is not None else where / "results" / f"bisect-{g.short}-{b.short}").absolute(),
        settings=settings,
    )
