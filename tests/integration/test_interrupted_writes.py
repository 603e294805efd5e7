"""Writes cut short where they hurt most, or crossed by a second process: a baseline replaced when a Ctrl-C
or a kill lands between its two renames or before its index is written, a baseline replaced while another
save copies it, a merge killed midway or whose output a run fills between the check and the claim, and the
gate's CI files on a full disk. Each must leave what was there before (or the whole new state) readable."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from reportdata import fake_result, write_run

from hpubench.analysis.runspread import run_to_run_figures
from hpubench.errors import UsageError
from hpubench.store import baselines, mergerun, runlock
from hpubench.store.rundir import ResultStore


def _run(path: Path, step_s: float, workload: str = "mlp") -> Path:
    return write_run(path, [fake_result(workload, "cpu", "cpu", precision="32-true", step_s=step_s)])


def _steps(path: Path) -> list[float]:
    return ResultStore(path).load()[0].step_times_s


def _save(run: Path, directory: Path, force: bool = False) -> Path:
    return baselines.save(run, "main", directory, force=force, spreads_of=run_to_run_figures)


def test_a_ctrl_c_between_the_renames_keeps_the_old_baseline(tmp_path: Path, monkeypatch) -> None:
    directory = tmp_path / "bl"
    _save(_run(tmp_path / "old", 0.1), directory)
    before = _steps(directory / "main")
    real_rename = os.rename
    calls: list[tuple[str, str]] = []

    def rename_then_interrupt(src, dst):
        real_rename(src, dst)
        calls.append((str(src), str(dst)))
        raise KeyboardInterrupt  # the old copy is aside, the new one not yet in place

    monkeypatch.setattr(os, "rename", rename_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        _save(_run(tmp_path / "new", 0.2), directory, force=True)
    monkeypatch.setattr(os, "rename", real_rename)
    assert calls and ".main.old-" in calls[0][1]
    assert _steps(baselines.resolve("main", directory)) == before
    assert sorted(p.name for p in directory.iterdir()) == [".lock", "index.json", "main"]


def test_a_kill_between_the_renames_is_undone_by_the_next_reader_or_save(tmp_path: Path) -> None:
    directory = tmp_path / "bl"
    _save(_run(tmp_path / "old", 0.1), directory)
    before = _steps(directory / "main")
    # What a SIGKILL between the renames leaves: the old copy aside, a half-written new one, no baseline.
    os.rename(directory / "main", directory / ".main.old-4242")
    (directory / ".main.tmp-4242").mkdir()
    assert _steps(baselines.resolve("main", directory)) == before
    assert sorted(p.name for p in directory.iterdir()) == [".lock", "index.json", "main"]
    os.rename(directory / "main", directory / ".main.old-4243")
    with pytest.raises(UsageError, match="already exists"):
        _save(_run(tmp_path / "new", 0.2), directory)  # restored first, so not silently replaced
    assert _steps(directory / "main") == before


# A save killed by SIGKILL right after the rename named in argv[4] (its destination's name).
_KILLED_SAVE = """
import os, sys
from pathlib import Path
from hpubench.analysis.runspread import run_to_run_figures
from hpubench.store import baselines
real = os.rename
def rename(src, dst):
    real(src, dst)
    if Path(dst).name.startswith(sys.argv[4]):
        os.kill(os.getpid(), 9)
os.rename = rename
baselines.save(sys.argv[1], sys.argv[3], sys.argv[2], force=True, spreads_of=run_to_run_figures)
"""


def _killed_save(run: Path, directory: Path, name: str, after: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_SAVE, str(run), str(directory), name, after],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]


@pytest.mark.parametrize("name", ["main", "v2"])  # replacing a baseline, and a new one
def test_a_save_killed_before_its_index_is_written_is_listed_as_saved(name: str, tmp_path: Path) -> None:
    directory = tmp_path / "bl"
    _save(_run(tmp_path / "old", 0.1), directory)
    new = _run(tmp_path / "new", 0.2)
    _killed_save(new, directory, name, after=name)  # the new baseline is in place, the index not written
    assert baselines.read_index(directory)[name]["source"] == str(new.resolve())
    assert _steps(baselines.resolve(name, directory)) == _steps(new)
    baselines.save(_run(tmp_path / "third", 0.3), "third", directory, spreads_of=run_to_run_figures)
    on_disk = json.loads((directory / "index.json").read_text())["baselines"]
    assert on_disk[name]["source"] == str(new.resolve())  # the next save wrote it into the index
    assert not list(directory.glob(".*pending*"))


def test_a_save_killed_with_the_old_baseline_aside_keeps_the_old_entry(tmp_path: Path) -> None:
    directory = tmp_path / "bl"
    old = _run(tmp_path / "old", 0.1)
    _save(old, directory)
    _killed_save(_run(tmp_path / "new", 0.2), directory, "main", after=".main.old-")
    assert _steps(baselines.resolve("main", directory)) == _steps(old)  # put back by the reader
    assert baselines.read_index(directory)["main"]["source"] == str(old.resolve())


def test_a_baseline_replaced_while_it_is_copied_is_copied_whole_from_one_run(
    tmp_path: Path, monkeypatch
) -> None:
    directory = tmp_path / "bl"
    old = write_run(tmp_path / "old", [fake_result("mlp", "cpu", "cpu")], hostname="old-host")
    new = write_run(tmp_path / "new", [fake_result("gpt", "cpu", "cpu")], hostname="new-host")
    _save(old, directory)
    real_load = baselines.load_results
    replaced: list[bool] = []

    def load_then_replaced(paths):
        records = real_load(paths)
        if not replaced:  # another save replaces the source between reading its records and its meta
            replaced.append(True)
            _save(new, directory, force=True)
        return records

    monkeypatch.setattr(baselines, "load_results", load_then_replaced)
    copy = baselines.save(directory / "main", "copy", directory, spreads_of=run_to_run_figures)
    assert replaced
    meta = ResultStore(copy).read_meta() or {}
    # the records and the metadata of the baseline that replaced it, not the records of one and the other's
    assert [r.cell.workload for r in ResultStore(copy).load()] == ["gpt"]
    assert meta["hostname"] == "new-host"


def test_a_run_filling_the_merge_output_after_its_check_is_not_overwritten(
    tmp_path: Path, monkeypatch
) -> None:
    a, b = _run(tmp_path / "a", 0.1), _run(tmp_path / "b", 0.2, "gpt")
    out = tmp_path / "out"
    real_check = runlock.check_free
    written: list[list[float]] = []

    def a_run_writes_there_first(path):
        real_check(path)
        written.append(_steps(_run(out, 0.3)))  # a run that wrote its records and exited in the window

    monkeypatch.setattr(runlock, "check_free", a_run_writes_there_first)
    with pytest.raises(UsageError, match="already holds a run"):
        mergerun.merge_dirs([a, b], out, ["hpubench", "results", "merge"])
    assert [r.step_times_s for r in ResultStore(out).load()] == written
    runlock.acquire(out)  # the merge gave its claim up
    runlock.release(out)


# A merge killed by SIGKILL at its first rename into the output (argv[3] "first"), or right after the rename
# of the file named in argv[3].
_KILLED_MERGE = """
import os, sys
from pathlib import Path
from hpubench.store import mergerun
real = os.rename
def rename(src, dst):
    if sys.argv[3] == "first":
        os.kill(os.getpid(), 9)
    real(src, dst)
    if Path(dst).name == sys.argv[3]:
        os.kill(os.getpid(), 9)
os.rename = rename
mergerun.merge_dirs(sys.argv[1].split(","), Path(sys.argv[2]), ["hpubench", "results", "merge"])
"""


@pytest.mark.parametrize("at", ["first", "meta.json"])
def test_a_merge_killed_midway_is_never_read_as_finished_and_the_same_merge_completes_it(
    at: str, tmp_path: Path
) -> None:
    a, b = _run(tmp_path / "a", 0.1), _run(tmp_path / "b", 0.2, "gpt")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_MERGE, f"{a},{b}", str(out), at],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert ResultStore(out).load() == []  # no records: nothing a reader could take for the merged run
    merged = mergerun.merge_dirs([a, b], out, ["hpubench", "results", "merge"])
    assert sorted(r.step_times_s for r in ResultStore(out).load()) == sorted([_steps(a), _steps(b)])
    assert len(merged.records) == 2 and "merged" in (ResultStore(out).read_meta() or {})
    assert sorted(p.name for p in out.iterdir()) == [".hpubench-run.lock", "cells.jsonl", "meta.json"]


def test_a_finished_run_is_not_taken_for_an_unfinished_merge(tmp_path: Path) -> None:
    a, b = _run(tmp_path / "a", 0.1), _run(tmp_path / "b", 0.2, "gpt")
    out = _run(tmp_path / "out", 0.3)
    (out / "cells.jsonl").unlink()  # a run's meta.json without records: not a merge's, so not cleared
    with pytest.raises(UsageError, match="already holds a run"):
        mergerun.merge_dirs([a, b], out, ["hpubench", "results", "merge"])
    assert (out / "meta.json").exists()


def _full_disk_at(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("flag", ["--junit", "--markdown"])
def test_a_ci_file_that_cannot_be_written_whole_keeps_the_old_one(flag: str, tmp_path: Path) -> None:
    base = _run(tmp_path / "base", 0.1)
    kept = tmp_path / "gate.out"
    kept.write_text("the previous build's file\n")
    proc = subprocess.run(
        [sys.executable, "-m", "hpubench", "gate", "-b", str(base), "-c", str(base), flag, str(kept)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: _full_disk_at(64),
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[-1].startswith("error: cannot write") and str(kept) in lines[-1], proc.stderr
    assert kept.read_text() == "the previous build's file\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
