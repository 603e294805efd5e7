"""The width of piped output: COLUMNS wins when it is a usable width, else 240 columns; a terminal size no
console can read is dropped before any console reads it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hpubench.present.cli.consoles import piped_width


@pytest.mark.parametrize(
    ("columns", "width"),
    [("100", 100), ("40", 40), ("39", 240), ("", 240), ("wide", 240), ("²", 240), ("١٠٠", 240)],
)
def test_columns_is_taken_only_as_a_plain_number_of_at_least_40(
    columns: str, width: int, monkeypatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert piped_width() == width


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["list", "workloads"]])
def test_a_terminal_size_in_non_ascii_digits_does_not_crash_a_command(args: list[str]) -> None:
    env = {**os.environ, "COLUMNS": "²", "LINES": "³"}
    proc = subprocess.run([sys.executable, "-m", "hpubench", *args], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
