"""The bad-input table (tests/badinput/cases/): each case exits 2 (or its documented code) with exactly
one line on stderr naming the problem, no traceback, no worker started, and every file that was there
before the call byte-identical after it (and no new file)."""

from __future__ import annotations

import shutil

import pytest

import hpubench.api
from tests.badinput.cases import CASES, Case
from tests.badinput.clirun import assert_one_line, run_in_process, snapshot
from tests.badinput.records import GOOD, json_line

ENV_NAMES = sorted({name for c in CASES for name in c.env} | {"OMP_NUM_THREADS"})


@pytest.fixture(scope="session")
def template(tmp_path_factory):
    """keep.txt, a good run ``run/`` and a baseline ``bl/main`` saved from it by the real command."""
    root = tmp_path_factory.mktemp("badinput-template")
    (root / "keep.txt").write_text("present before the call\n")
    (root / "run").mkdir()
    (root / "run" / "cells.jsonl").write_bytes(json_line(GOOD))
    saved = run_in_process("baseline", "save", str(root / "run"), "--name", "main", "--dir", str(root / "bl"))
    assert saved.code == 0, saved.stderr
    return root


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_table(case: Case, template, tmp_path, monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("bad input reached the launcher: workers would have started")

    monkeypatch.setattr(hpubench.api, "open_launcher", refuse)
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    work = tmp_path / "w"
    shutil.copytree(template, work)
    for rel, content in case.files.items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    monkeypatch.chdir(work)
    before = snapshot(work)
    outcome = run_in_process(*case.args)
    assert_one_line(outcome, case.fragment, case.code)
    assert snapshot(work) == before
