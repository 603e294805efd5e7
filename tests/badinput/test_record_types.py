"""Issue 14 item 5: a record with the right keys and the wrong types is refused on read, in one place,
naming the file, the line and the field; records from older versions (newer fields absent) still load."""

from __future__ import annotations

import math

import pytest

from tests.badinput.clirun import assert_one_line, run_in_process, snapshot
from tests.badinput.records import good_record, with_path, write_run

SPOILED = [
    ("step_times_s", "0.1,0.2"),
    ("step_times_s", [0.1, math.nan, 0.1]),
    ("metrics.samples_per_s", "fast"),
    ("runtime", "cpu"),
    ("metrics.samples_per_s_ci", [1.0]),
    ("cell.precision", ...),
]


@pytest.mark.parametrize(("field", "value"), SPOILED, ids=[f for f, _ in SPOILED])
@pytest.mark.parametrize("command", ["results", "baseline"])
def test_spoiled_record_is_refused(tmp_path, monkeypatch, field, value, command):
    monkeypatch.chdir(tmp_path)
    good = good_record()
    run = write_run(tmp_path / "run", [good, with_path(good, field, value)])
    before = snapshot(tmp_path)
    if command == "results":
        outcome = run_in_process("results", str(run))
    else:
        outcome = run_in_process("baseline", "save", str(run), "--name", "main", "--dir", "bl")
    assert_one_line(outcome, "cells.jsonl:2")
    assert field.split(".")[-1] in outcome.stderr
    assert snapshot(tmp_path) == before


def test_record_without_newer_optional_fields_loads(tmp_path, monkeypatch):
    """A record written before repeat, quality, telemetry, loader, profile, auto_steps existed."""
    monkeypatch.chdir(tmp_path)
    old = good_record()
    for name in ("repeat", "quality", "quality_reasons", "memory_timeline", "telemetry", "loader", "profile"):
        old.pop(name, None)
    old["cell"].pop("auto_steps", None)
    old["cell"].pop("device_ids", None)
    run = write_run(tmp_path / "run", [old])
    outcome = run_in_process("results", str(run))
    assert outcome.code == 0, outcome.stderr
    assert "mlp" in outcome.stdout
