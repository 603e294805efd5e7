"""README's CLI synopsis against the CLI itself (issue 15: the README's step defaults did not match --help).

Every option the synopsis names must exist in that command's --help, and every default it shows
(``[--min-time 2]``) must be the default --help states. A change to either side without the other fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
# two-word commands first
COMMANDS = ("list cells", "list workloads", "baseline save", "baseline list", "results merge")
SINGLE = (
    "run",
    "doctor",
    "env",
    "results",
    "report",
    "compare",
    "profile",
    "gate",
    "export",
    "history",
    "bisect",
)


def synopsis() -> list[tuple[str, str]]:
    """(command, its synopsis text) for every 'hpubench ...' line of the CLI section, continuations joined."""
    text = README.read_text().split("## CLI", 1)[1].split("\n## ", 1)[0]
    entries: list[tuple[str, str]] = []
    for line in text.splitlines():
        stripped = line.split("  #", 1)[0].strip()
        if stripped.startswith("hpubench "):
            rest = stripped[len("hpubench ") :]
            top = "" if rest.startswith("--") else None  # an option of hpubench itself (--version)
            cmd = next((c for c in (*COMMANDS, *SINGLE) if rest.startswith(c)), top)
            assert cmd is not None, f"README names an unknown command: {stripped}"
            entries.append((cmd, rest[len(cmd) :]))
        elif line.startswith("        ") and entries and stripped.startswith("["):
            cmd, body = entries[-1]
            entries[-1] = (cmd, f"{body} {stripped}")
    return entries


@cache
def help_text(cmd: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "hpubench", *cmd.split(), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def option_entries(help_out: str) -> dict[str, str]:
    """Each --option of a --help output with its help text on one line."""
    entries: dict[str, str] = {}
    current: list[str] | None = None
    for line in help_out.split("Options:", 1)[-1].splitlines():
        m = re.match(r"^\s{2}(-\w, )?(--[\w-]+)", line)
        if m:
            current = [line]
            entries[m.group(2)] = ""
            name = m.group(2)
        elif current is not None and line.startswith("      "):
            current.append(line)
        else:
            continue
        entries[name] = " ".join(" ".join(current).split())
    return entries


OPTION = re.compile(r"(--[\w-]+)(?: ([^\s\]|]+))?")  # --name and the value the README shows, if any
CASES = [(cmd, opt, val) for cmd, body in synopsis() for opt, val in OPTION.findall(body)]


def test_the_synopsis_is_parsed() -> None:
    assert {"run", "list cells", "gate", "compare"} <= {c for c, _ in synopsis()}
    assert len(CASES) > 30


@pytest.mark.parametrize(("cmd", "option", "value"), CASES, ids=[f"{c}:{o}" for c, o, _ in CASES])
def test_readme_option_exists_with_its_default(cmd: str, option: str, value: str) -> None:
    entries = option_entries(help_text(cmd))
    assert option in entries, f"README: 'hpubench {cmd} {option}' but --help has no {option}"
    if value and re.fullmatch(r"\d+(\.\d+)?%?", value):
        said = re.search(rf"(?<![\d.]){re.escape(value)}(?![\d%])", entries[option])
        assert said is not None and "default" in entries[option], (
            f"README shows {option} {value}; --help says: {entries[option]}"
        )
