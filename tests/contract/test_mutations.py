"""The double bites: each plausible hpubench mistake of ``tests/mutants/mutants.py``, injected into every
process of a test run, makes the tests named to catch it fail (and they pass without it: they are part of
the suite). One pytest run per mutant, in its own temporary directory so its double's box of cards is its
own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MUTANTS_DIR = ROOT / "tests" / "mutants"
sys.path.insert(0, str(MUTANTS_DIR))
from mutants import ENV, MUTANTS  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_the_mutant_is_caught(name: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT_HPU", "HPUBENCH_FAKE", "HABANA_"))}
    env.update(
        {ENV: name, "TMPDIR": str(tmp_path)},
        PYTHONPATH=os.pathsep.join([str(MUTANTS_DIR), str(ROOT), env.get("PYTHONPATH", "")]),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "mutant_plugin",
            *MUTANTS[name].caught_by,
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    assert done.returncode == 1 and " failed" in summary, (
        MUTANTS[name].mistake,
        summary,
        done.stdout[-3000:],
    )
