"""``hpubench bisect`` in a throwaway git repository of five commits whose workload (a plugin file in the
repository) sleeps 2 ms a step, and 20 ms more from the third commit on. The planted regression is large
against the host's noise because the test is about the bisect's mechanics, not its power: with three rounds
a side, an unchanged commit is placed only when its interval against GOOD clears the midpoint, and on a slow,
shared VM a bare step of this MLP (or a 3 ms regression on a 2 ms sleep) left it undecided, as a user would
be told there. Real runs in real worktrees: the bisect is stopped by SIGTERM once it has confirmed the
regression, resumed by the same command without redoing those runs, and names the third commit; the user's
working tree and HEAD are untouched throughout, and the set-up command ran at each commit it tested. Then
each refusal: one line, exit 2, nothing run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gitdata import git

pytestmark = pytest.mark.slow

WORKLOAD = """
import time
from typing import ClassVar

import torch
from torch import nn

import workloads
from workloads.base import SizeSpec, Workload

BASE_S = 0.002
EXTRA_S = {extra}


@workloads.register
class Toy(Workload):
    name = "toy"
    description = "a small MLP; BASE_S + EXTRA_S seconds of sleep a step"
    sizes: ClassVar[dict[str, SizeSpec]] = {{"tiny": SizeSpec(16, "tiny")}}

    def build_model(self, size):
        return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))

    def make_batch(self, size, batch_size, device, generator):
        return (torch.randn(batch_size, 32, generator=generator, device=device),)

    def loss(self, model, batch):
        if batch[0].device.type != "meta":
            time.sleep(BASE_S + EXTRA_S)
        return model(batch[0]).square().mean()
"""
RUN_ARGS = ["--workloads-from", "bench/wl.py", "-w", "toy", "--devices", "1", "--precision", "32-true"]
RUN_ARGS += ["--mode", "eager", "--graphs", "off", "--steps", "40"]


def hpubench(repo: Path, *args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpubench", *args], cwd=repo, capture_output=True, text=True, timeout=600, **kw
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, list[str]]:
    """Five commits; the third makes every step 20 ms slower. Returns the repository and the shas."""
    root = tmp_path_factory.mktemp("project")
    git(root, "init", "-q", "-b", "main")
    (root / "bench").mkdir()
    shas = []
    for i in range(5):
        (root / "bench" / "wl.py").write_text(WORKLOAD.format(extra=0.020 if i >= 2 else 0.0))
        (root / "NOTES").write_text(f"commit {i}\n")
        git(root, "add", ".")
        git(root, "commit", "-qm", f"commit {i}" + (": sleep 20 ms a step" if i == 2 else ""))
        shas.append(git(root, "rev-parse", "HEAD").strip())
    return root, shas


def _wait_for_confirmation(proc: subprocess.Popen, state: Path, bad: str, rounds: int) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if state.exists():
            done = json.loads(state.read_text()).get("rounds", {})
            if done.get(bad, 0) >= rounds:
                return
        time.sleep(0.2)
    raise AssertionError(f"the bisect did not confirm in time (exit {proc.poll()})")


@pytest.mark.serial
def test_bisect_names_the_commit_and_resumes_after_sigterm(repo, tmp_path) -> None:
    root, shas = repo
    out, setup_log = (
        root / "results" / "b1",
        tmp_path / "setup.log",
    )  # --out relative: read from where bisect runs
    cmd = [shas[0], shas[4], "--repeat", "3", "--out", "results/b1"]
    cmd += ["--setup", f"git rev-parse HEAD >> {setup_log}", "--", *RUN_ARGS]
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpubench", "bisect", *cmd],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for_confirmation(proc, out / "bisect.json", shas[4], 3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err.decode()
    assert "resume with the same command" in err.decode().splitlines()[-1]
    assert git(root, "worktree", "list").count("\n") == 1  # the temporary worktrees are gone

    done = hpubench(root, "bisect", *cmd)
    assert done.returncode == 0, done.stderr + done.stdout  # stdout holds each candidate's evidence
    assert f"first bad commit: {shas[2]} commit 2: sleep 20 ms a step" in done.stdout
    # BAD's three confirming runs were kept, not run again
    assert len((out / "runs" / shas[4][:10] / "cells.jsonl").read_text().splitlines()) == 3
    tested = [
        line.split("│")[1].strip()
        for line in done.stdout.splitlines()
        if line.startswith("│ ") and "│" in line[2:]
    ]
    tested = [t for t in tested if t]
    assert tested[0] == shas[4][:10] and set(tested) <= {s[:10] for s in shas[1:]} and shas[2][:10] in tested
    assert "runs measured" in done.stdout
    # the set-up ran in each tested commit's worktree (GOOD once per session), never in the user's tree
    ran = setup_log.read_text().split()
    assert ran.count(shas[0]) == 2 and set(ran) == {shas[0], *(s for s in shas if s[:10] in tested)}
    # the user's working tree, branch and HEAD are as they were
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""
    assert (
        git(root, "rev-parse", "HEAD").strip() == shas[4]
        and git(root, "branch", "--show-current").strip() == "main"
    )
    assert git(root, "worktree", "list").count("\n") == 1


@pytest.mark.serial
def test_no_regression_between_good_and_bad_is_refused(repo, tmp_path) -> None:
    root, shas = repo
    # two rounds a side suffice: with the threshold at 20%, only a real 20% drop could count
    p = hpubench(
        root,
        "bisect",
        shas[0],
        shas[1],
        "--repeat",
        "2",
        "--out",
        str(tmp_path / "b"),
        "--max-regression",
        "20%",
        "--",
        *RUN_ARGS,
    )
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()[-1:]
    assert line.startswith("error: no regression between GOOD and BAD") and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuchrev", "HEAD"], "error: unknown revision 'nosuchrev' for GOOD"),
        (["HEAD", "HEAD~4"], "is not an ancestor of BAD"),
        (["HEAD~4", "HEAD", "--", "--out", "x"], "error: --out is bisect's to set for each run"),
        (["HEAD~4", "HEAD", "--", "--stpes", "3"], "error: No such option: --stpes"),
        (["HEAD~4", "HEAD", "--repeat", "1"], "error: --repeat must be between 2 and 1,000"),
    ],
)
def test_refusals_are_one_line_and_run_nothing(repo, tmp_path, args: list[str], message: str) -> None:
    root, _ = repo
    p = hpubench(root, "bisect", *args, "--out", str(tmp_path / "b"))
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "b").exists()
    assert git(root, "worktree", "list").count("\n") == 1


def test_a_refused_out_directory_is_left_as_it_was(repo, tmp_path) -> None:
    """A directory holding a run (or anything else but a bisect) is refused before bisect claims it: its
    lock file keeps its content and no lock file is added."""
    root, _ = repo
    held = tmp_path / "run"
    held.mkdir()
    (held / "cells.jsonl").write_text("{}\n")
    (held / ".hpubench-run.lock").write_text("another run's\n")
    before = {f.name: f.read_bytes() for f in held.iterdir()}
    p = hpubench(root, "bisect", "HEAD~4", "HEAD", "--out", str(held))
    assert p.returncode == 2 and "holds other files and no bisect.json" in p.stderr, p.stderr
    assert {f.name: f.read_bytes() for f in held.iterdir()} == before


def test_a_dirty_tree_is_refused(repo, tmp_path) -> None:
    root, _ = repo
    notes = root / "NOTES"
    before = notes.read_text()
    notes.write_text("edited\n")
    try:
        p = hpubench(root, "bisect", "HEAD~4", "HEAD", "--out", str(tmp_path / "b"))
    finally:
        notes.write_text(before)
    assert p.returncode == 2 and p.stderr.startswith(
        "error: the working tree has uncommitted changes (NOTES)"
    )
    assert len(p.stderr.strip().splitlines()) == 1 and not (tmp_path / "b").exists()
