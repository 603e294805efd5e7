"""The pieces of ``hpubench bisect`` that touch git and the shell, without any run: a worktree at a commit
(gone afterwards, also when the body raises), the set-up command inside it with the worktree first on
PYTHONPATH, and a failing set-up's last line (the commit is then skipped, ``analysis.bisect``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gitdata import git

from hpubench.errors import UsageError
from hpubench.run.bisect import gitrepo, rounds


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[gitrepo.Commit]]:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for i in range(2):
        (root / "VERSION").write_text(f"{i}\n")
        git(root, "add", ".")
        git(root, "commit", "-qm", f"version {i}")
    return root, [gitrepo.resolve(root, "HEAD~1", "GOOD"), gitrepo.resolve(root, "HEAD", "BAD")]


def test_the_setup_runs_in_the_commits_worktree(repo, tmp_path: Path) -> None:
    root, (old, new) = repo
    log = tmp_path / "setup.log"
    with gitrepo.worktree(root, old, tmp_path) as tree:
        rounds.set_up('cat VERSION; echo "$PYTHONPATH" "$HPUBENCH_BISECT_WORKTREE"', tree, old, log)
        version, paths = log.read_text().splitlines()
        pythonpath, named = paths.split(" ")
        assert version == "0" and pythonpath.split(os.pathsep)[0] == str(tree) and named == str(tree)
    assert not tree.exists() and git(root, "worktree", "list").count("\n") == 1
    assert (root / "VERSION").read_text() == "1\n"  # the user's tree is at its own commit throughout
    assert gitrepo.candidates(root, old, new) == [new]


def test_a_failing_setup_says_its_last_line(repo, tmp_path: Path) -> None:
    root, (old, _) = repo
    with gitrepo.worktree(root, old, tmp_path) as tree, pytest.raises(rounds.SetupFailed) as exc:
        rounds.set_up("echo building; echo 'no compiler found' >&2; exit 3", tree, old, tmp_path / "s.log")
    assert exc.value.line.startswith(f"--setup exited with 3 at {old.short}: no compiler found")


def test_a_worktree_is_removed_when_its_body_raises(repo, tmp_path: Path) -> None:
    root, (old, _) = repo
    with pytest.raises(KeyboardInterrupt), gitrepo.worktree(root, old, tmp_path) as tree:
        raise KeyboardInterrupt
    assert not tree.exists() and git(root, "worktree", "list").count("\n") == 1


def test_a_revision_outside_the_first_parent_line_is_refused(repo) -> None:
    root, (old, new) = repo
    git(root, "checkout", "-q", "-b", "side", old.sha)
    (root / "SIDE").write_text("x\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "side")
    side = gitrepo.resolve(root, "HEAD", "GOOD")
    with pytest.raises(UsageError, match="is not an ancestor of BAD"):
        gitrepo.candidates(root, side, new)
