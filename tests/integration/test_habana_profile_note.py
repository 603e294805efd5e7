"""What an HPU profile records about ``HABANA_PROFILE``, on the bridge double.

The bridge sets ``HABANA_PROFILE=profile_api_light`` when the variable is unset at its load (hpu-api.md,
"Timing and profiling"), so by the time a cell profiles the variable is never unset: the record must
still say that the bridge's default profiler was in force, and must not say so when the user chose
another one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hpubench.accelerators.hpu.rules import habana_profile_in_force

FAKES = Path(__file__).resolve().parents[1] / "fakes"
ROOT = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent(
    """
    import json, sys
    from hpubench.plan.cell import Cell
    from hpubench.plan.runoptions import RunOptions
    from hpubench.run.worker import run_cell

    options = RunOptions.from_dict(
        {"profile": {"wait": 0, "warmup": 1, "active": 1, "top": 5}, "output_dir": sys.argv[1]}
    )
    cell = Cell.from_dict({"workload": "mlp", "accelerator": "hpu", "mode": "lazy", "steps": 2})
    print(json.dumps(run_cell(cell, options=options).to_dict()))
    """
)


def profile_record(out: Path, habana_profile: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT_HPU", "HPUBENCH_FAKE", "HABANA_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(FAKES), str(ROOT)]), PT_HPU_LAZY_MODE="1")
    if habana_profile is not None:
        env["HABANA_PROFILE"] = habana_profile
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, str(out)], env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rec["status"] == "ok", rec["reason"]
    return rec["profile"]


def default_notes(profile: dict) -> list[str]:
    return [n for n in profile["notes"] if "HABANA_PROFILE" in n]


def test_unset_habana_profile_records_the_bridges_default_with_a_note(tmp_path: Path) -> None:
    p = profile_record(tmp_path, None)
    assert p["habana_profile"] == "profile_api_light"
    notes = default_notes(p)
    assert len(notes) == 1 and "default" in notes[0] and "profile_api_light" in notes[0], p["notes"]


@pytest.mark.parametrize("chosen", ["profile_api", "profile_api_with_nics"])
def test_a_chosen_habana_profile_is_recorded_without_the_default_note(tmp_path: Path, chosen: str) -> None:
    p = profile_record(tmp_path, chosen)
    assert p["habana_profile"] == chosen and default_notes(p) == [], p["notes"]


@pytest.mark.parametrize("read", [None, "profile_api_light"])
def test_the_default_is_noted_whether_or_not_the_bridges_setting_reaches_os_environ(read: str | None) -> None:
    in_force, note = habana_profile_in_force(read)
    assert in_force == "profile_api_light" and note is not None and "default" in note
    assert habana_profile_in_force("profile_api") == ("profile_api", None)
