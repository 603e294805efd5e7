"""What ``hpubench bisect`` keeps for a resume (``run.bisect.state``) and how it reads its run options
(``run.bisect.request``): a resumed state comes back whole, another bisect's directory is refused, and
absolute paths into the repository become paths read at each commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpubench.errors import UsageError
from hpubench.run.bisect.request import check_run_args, repo_relative
from hpubench.run.bisect.state import STATE_FILE, open_state

ARGS = ["-w", "toy", "--steps", "100"]


def test_a_state_comes_back_as_it_was_saved(tmp_path: Path) -> None:
    st = open_state(tmp_path, "a" * 40, "b" * 40, ARGS, "make")
    st.rounds["b" * 40] = 3
    st.setup_failed["c" * 40] = "--setup exited with 1"
    st.run_seconds += [2.5, 3.5]
    st.save()
    again = open_state(tmp_path, "a" * 40, "b" * 40, ARGS, "make")
    assert again.as_json() == st.as_json() and again.seconds_per_run() == 3.0


@pytest.mark.parametrize(
    ("good", "args", "setup", "named"),
    [
        ("c" * 40, ARGS, "make", "good"),
        ("a" * 40, ["-w", "gpt"], "make", "run_args"),
        ("a" * 40, ARGS, None, "setup"),
    ],
)
def test_another_bisects_directory_is_refused(
    tmp_path: Path, good: str, args: list, setup, named: str
) -> None:
    open_state(tmp_path, "a" * 40, "b" * 40, ARGS, "make").save()
    before = (tmp_path / STATE_FILE).read_bytes()
    with pytest.raises(UsageError, match=f"holds a bisect with another {named}"):
        open_state(tmp_path, good, "b" * 40, args, setup)
    assert (tmp_path / STATE_FILE).read_bytes() == before


def test_a_directory_of_other_files_or_a_corrupt_state_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="holds other files"):
        open_state(tmp_path, "a" * 40, "b" * 40, ARGS, None)
    (tmp_path / STATE_FILE).write_text("{half")
    with pytest.raises(UsageError, match="cannot read"):
        open_state(tmp_path, "a" * 40, "b" * 40, ARGS, None)


def test_options_bisect_sets_itself_are_refused() -> None:
    check_run_args(["-w", "gpt", "--steps", "5"])
    for bad in (["--out", "x"], ["--repeat=3"], ["--resume"], ["--shard", "1/2"], ["-o", "x"]):
        with pytest.raises(UsageError, match="is bisect's to set"):
            check_run_args(bad)


def test_absolute_paths_into_the_repository_are_read_at_each_commit(tmp_path: Path) -> None:
    inside = tmp_path / "bench" / "wl.py"
    args = ["--workloads-from", str(inside), "--workloads-from", "/etc/other.py", "-w", "toy"]
    assert repo_relative(args, tmp_path) == [
        "--workloads-from",
        "bench/wl.py",
        "--workloads-from",
        "/etc/other.py",
        "-w",
        "toy",
    ]
