"""`report`, `compare` and `export` write only onto a new path or a plain file outside any results directory.

Issue 14 item 1: the output was a temporary file renamed over whatever ``-o`` named, so a device node, a
FIFO, a symlink or the run's own ``cells.jsonl`` was replaced, and an unknown suffix silently became HTML.
Each refusal is one line on stderr, exit 2, and the path is exactly as it was (same kind, same bytes).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from reportdata import fake_result, write_run

from hpubench.present.cli.main import main

COMMANDS = ("report", "compare", "export")


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    a = write_run(tmp_path / "a", [fake_result("mlp", "cpu", "cpu", precision="32-true")])
    b = write_run(tmp_path / "b", [fake_result("mlp", "cpu", "cpu", precision="32-true", seed=1)])
    (a / "logs").mkdir()
    (a / "logs" / "cell.log").write_text("a cell's log\n")
    return {"a": a, "b": b}


def argv(command: str, runs: dict[str, Path], out: Path | str) -> list[str]:
    if command == "report":
        return ["report", str(runs["a"]), "-o", str(out)]
    if command == "compare":
        return ["compare", str(runs["a"]), str(runs["b"]), "-o", str(out)]
    return ["export", str(runs["a"]), "-o", str(out)]


def snapshot(path: Path) -> tuple:
    """What must not change: the kind of the entry, a symlink's target, a regular file's bytes."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISREG(st.st_mode):
        return ("file", path.read_bytes())
    return (stat.S_IFMT(st.st_mode), st.st_rdev)


def refused(command: str, runs: dict[str, Path], out: Path, capsys) -> str:
    before = snapshot(out)
    with pytest.raises(SystemExit) as e:
        main(argv(command, runs, out))
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert snapshot(out) == before
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]
    return err


def _target(kind: str, runs: dict[str, Path], tmp_path: Path, suffix: str) -> Path:
    if kind == "fifo":
        p = tmp_path / f"fifo{suffix}"
        os.mkfifo(p)
    elif kind == "char-device":
        p = tmp_path / f"full{suffix}"
        try:  # the same device as /dev/full, made here so the old code cannot replace the real one
            os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        except OSError as exc:
            pytest.skip(f"cannot make a device node here: {exc}")
    elif kind == "symlink-to-device":
        p = tmp_path / f"null{suffix}"
        p.symlink_to("/dev/null")
    elif kind == "directory":
        p = tmp_path / f"dir{suffix}"
        p.mkdir()
    elif kind == "symlink-to-directory":
        (tmp_path / "realdir").mkdir()
        p = tmp_path / f"dirlink{suffix}"
        p.symlink_to(tmp_path / "realdir")
    elif kind == "cells.jsonl":
        p = runs["a"] / "cells.jsonl"
    elif kind == "meta.json":
        p = runs["a"] / "meta.json"
    elif kind == "file-in-results-dir":
        p = runs["a"] / f"report{suffix}"
        p.write_text("someone's notes\n")
    elif kind == "file-in-run-logs":
        p = runs["a"] / "logs" / "cell.log"
    elif kind == "symlink-to-cells.jsonl":
        p = tmp_path / f"cells-link{suffix}"
        p.symlink_to(runs["a"] / "cells.jsonl")
    else:  # pragma: no cover - the parametrisation below names every kind
        raise AssertionError(kind)
    return p


KINDS = (
    "fifo",
    "char-device",
    "symlink-to-device",
    "directory",
    "symlink-to-directory",
    "cells.jsonl",
    "meta.json",
    "file-in-results-dir",
    "file-in-run-logs",
    "symlink-to-cells.jsonl",
)
SUFFIX = {"report": ".html", "compare": ".html", "export": ".json"}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_path_that_is_not_a_plain_file_outside_results_is_refused(command, kind, runs, tmp_path, capsys):
    out = _target(kind, runs, tmp_path, SUFFIX[command])
    err = refused(command, runs, out, capsys)
    assert str(out) in err or out.name in err, err


@pytest.mark.parametrize(
    ("command", "name", "known"),
    [
        ("report", "r.txt", "html, csv, parquet, json"),
        ("report", "r", "html, csv, parquet, json"),
        ("compare", "c.csv", "html"),
        ("export", "e.html", "json"),
    ],
)
def test_an_unknown_suffix_is_an_error_listing_the_known_ones(command, name, known, runs, tmp_path, capsys):
    out = tmp_path / name
    with pytest.raises(SystemExit) as e:
        main(argv(command, runs, out))
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1, err
    assert "suffix" in err and known in err, err
    assert not out.exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_new_path_or_a_plain_file_elsewhere_is_written(command, runs, tmp_path, capsys):
    new = tmp_path / f"new{SUFFIX[command]}"
    main(argv(command, runs, new))
    assert new.stat().st_size > 0
    old = tmp_path / f"old{SUFFIX[command]}"
    old.write_text("an earlier output\n")
    main(argv(command, runs, old))
    assert old.read_text() != "an earlier output\n"
    assert (runs["a"] / "cells.jsonl").read_text().count("\n") == 1
