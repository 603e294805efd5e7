"""Issue 14 item 7: arguments that were silently accepted, misread or ended in a traceback. Each one now
exits 2 with one line naming the fix, before any cell runs, and leaves the directory as it was."""

from __future__ import annotations

import pytest

import hpubench.api
from tests.badinput.clirun import assert_one_line, run_in_process, snapshot

SLASH_SIZE_PLUGIN = """
from typing import ClassVar
from workloads import register
from workloads.mlp import MLP
from workloads.base import SizeSpec

@register
class Slashed(MLP):
    name = "slashed"
    sizes: ClassVar[dict[str, SizeSpec]] = {"a/b": SizeSpec(4, "a size whose name holds a slash")}
"""


@pytest.fixture
def no_launch(monkeypatch, tmp_path):
    """Fail loudly if a refused call gets as far as starting workers (today's code often did)."""

    def refuse(*args, **kwargs):
        raise AssertionError("bad input reached the launcher: cells would have run")

    monkeypatch.setattr(hpubench.api, "open_launcher", refuse)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("present before the call\n")
    return tmp_path


def _refused(tmp_path, fragment, *args):
    before = snapshot(tmp_path)
    assert_one_line(run_in_process(*args), fragment)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("value", ["", "mlp,", ",", " "])
def test_empty_workload_value(no_launch, value):
    _refused(no_launch, "--workload", "run", "--workload", value, "--out", "o")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400"])
def test_timeout_not_finite(no_launch, value):
    _refused(no_launch, "--timeout", "run", "-w", "mlp", "--timeout", value, "--out", "o")


def test_empty_out(no_launch):
    _refused(no_launch, "--out", "run", "-w", "mlp", "--out", "")


def test_steps_beyond_bound(no_launch):
    _refused(no_launch, "--steps", "run", "-w", "mlp", "--steps", "1000000000000", "--out", "o")


def test_steps_beyond_bound_in_matrix_file(no_launch):
    (no_launch / "m.toml").write_text('workload = "mlp"\nsteps = 1000000000000\n')
    _refused(no_launch, "steps", "run", "--matrix", "m.toml", "--out", "o")


def test_extra_work_nan_in_matrix_file(no_launch):
    (no_launch / "m.toml").write_text('workload = "mlp"\noptions = {extra_work = nan}\n')
    _refused(no_launch, "extra_work", "run", "--matrix", "m.toml", "--out", "o")


def test_both_op_list_spellings(no_launch, monkeypatch):
    (no_launch / "a.txt").write_text("add\n")
    (no_launch / "b.txt").write_text("mul\n")
    monkeypatch.setenv("PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST", str(no_launch / "a.txt"))
    monkeypatch.setenv("LOWER_LIST", str(no_launch / "b.txt"))
    _refused(no_launch, "LOWER_LIST", "run", "-w", "mlp", "--out", "o")


# These need the workload catalog, so they start the worker server (no cell runs): a few seconds each.


def test_unknown_option_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _refused(tmp_path, "nosuch", "list", "cells", "-w", "mlp", "-a", "cpu", "--option", "nosuch=1")


def test_excludes_remove_every_cell(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.toml").write_text('workload = "mlp"\naccelerator = "cpu"\n[[exclude]]\nworkload = "mlp"\n')
    _refused(tmp_path, "exclude", "run", "--matrix", "m.toml", "--out", "o")


def test_size_name_with_slash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slashed.py").write_text(SLASH_SIZE_PLUGIN)
    _refused(tmp_path, "a/b", "list", "workloads", "--workloads-from", "slashed.py")
