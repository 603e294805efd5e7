"""The git that ``hpubench bisect`` needs: the repository, its revisions, the path between two commits, and
temporary worktrees that leave the user's own working tree alone.

Every refusal is a UsageError line naming the fix; every git call has a timeout, so a hung git (a
credential prompt, a lock) cannot hang the bisect.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hpubench.errors import UsageError

GIT_TIMEOUT_S = 60


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except FileNotFoundError as exc:
        raise UsageError("git is not installed here; fix: install git (bisect checks commits out)") from exc
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"'git {' '.join(args)}' took over {GIT_TIMEOUT_S} s in {repo}") from exc


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def toplevel(path: Path) -> Path:
    """The root of the git repository ``path`` is in."""
    p = _git(path, "rev-parse", "--show-toplevel")
    if p.returncode != 0:
        raise UsageError(f"{path} is not in a git repository; fix: run 'hpubench bisect' inside your project")
    return Path(p.stdout.strip())


def check_clean(repo: Path) -> None:
    """Refuse a working tree with uncommitted changes to tracked files: they are in no commit bisect tests,
    so a regression they cause (or hide) could not be found."""
    p = _git(repo, "status", "--porcelain", "--untracked-files=no")
    changed = [ln[3:] for ln in p.stdout.splitlines() if ln.strip()]
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        raise UsageError(
            f"the working tree has uncommitted changes ({', '.join(changed[:3])}{more}); "
            "fix: commit or stash them first (bisect tests commits, never the working tree)"
        )


def resolve(repo: Path, rev: str, role: str) -> Commit:
    """``rev`` as a commit; ``role`` (GOOD or BAD) names it in the refusal."""
    if not rev or rev.startswith("-"):
        raise UsageError(f"{role} must be a revision (a commit, branch or tag), got {rev!r}")
    p = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if p.returncode != 0:
        raise UsageError(
            f"unknown revision {rev!r} for {role}; fix: give a commit, branch or tag of this repository "
            "('git log --oneline' lists them)"
        )
    return describe(repo, p.stdout.strip())


def describe(repo: Path, sha: str) -> Commit:
    p = _git(repo, "show", "-s", "--format=%s", sha, "--")
    return Commit(sha, p.stdout.strip() if p.returncode == 0 else "")


def candidates(repo: Path, good: Commit, bad: Commit) -> list[Commit]:
    """The commits after GOOD up to BAD on BAD's first-parent line, oldest first; refused when GOOD is not
    an ancestor of BAD."""
    if good.sha == bad.sha:
        raise UsageError(f"GOOD and BAD are the same commit ({good.short}); fix: give BAD a later commit")
    if _git(repo, "merge-base", "--is-ancestor", good.sha, bad.sha).returncode != 0:
        raise UsageError(
            f"GOOD {good.short} is not an ancestor of BAD {bad.short}; fix: give GOOD an older commit "
            "of BAD's history (swapped them?)"
        )
    p = _git(repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{good.sha}..{bad.sha}")
    shas = p.stdout.split()
    if p.returncode != 0 or not shas or shas[-1] != bad.sha:
        raise UsageError(
            f"no first-parent path from GOOD {good.short} to BAD {bad.short} "
            f"({_last_line(p.stderr) or 'GOOD is reached only through a merged branch'}); "
            "fix: give GOOD a commit on BAD's first-parent line"
        )
    return [describe(repo, s) for s in shas]


@contextmanager
def worktree(repo: Path, commit: Commit, parent: Path) -> Iterator[Path]:
    """A detached worktree of ``commit`` under ``parent``, removed (with git's record of it) on exit, also
    when the checkout itself is interrupted."""
    path = parent / commit.short
    try:
        p = _git(repo, "worktree", "add", "--detach", "--force", str(path), commit.sha)
        if p.returncode != 0:
            raise UsageError(f"could not check out {commit.short} in a worktree: {_last_line(p.stderr)}")
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        _git(repo, "worktree", "prune")
