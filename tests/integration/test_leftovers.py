"""What a killed process leaves (a temporary file beside its output, a run's scratch folder) is removed by
the next writer or run, and what a live process may still use is not: real processes, killed with SIGKILL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpubench.present.outfile import write_output
from hpubench.store import leftovers
from hpubench.store.rundir import write_json_atomic

# A child that makes what its code names, prints its path, then kills itself before any cleanup runs.
KILLED = """
import os, signal, sys
from pathlib import Path
from hpubench.store import leftovers
made = {make}
print(made, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
# A child that keeps what it made until its stdin closes.
HOLDING = """
import sys
from pathlib import Path
from hpubench.store import leftovers
made = {make}
print(made, flush=True)
sys.stdin.read()
"""


def killed_child(make: str, env: dict[str, str] | None = None) -> Path:
    proc = subprocess.run(
        [sys.executable, "-c", KILLED.format(make=make)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == -9, proc.stderr
    return Path(proc.stdout.strip())


def temp_of_killed_writer(target: Path) -> Path:
    made = killed_child(f"leftovers.temp_beside(Path({str(target)!r}))\nmade.write_bytes(b'half')")
    assert made.exists() and made.parent == target.parent
    return made


@pytest.mark.parametrize("writer", ["report -o", "run directory"])
def test_a_killed_writers_temporary_file_goes_with_the_next_write(writer: str, tmp_path: Path) -> None:
    target = tmp_path / ("report.html" if writer == "report -o" else "meta.json")
    target.write_text("old")
    dead = temp_of_killed_writer(target)
    live = leftovers.temp_beside(target)  # this process's own name: a live writer's
    live.write_bytes(b"in progress")
    other_host = target.with_name(f".{target.name}.elsewhere-1{leftovers.TEMP_SUFFIX}")
    other_host.write_bytes(b"maybe in progress")
    old_other_host = target.with_name(f".{target.name}.elsewhere-2{leftovers.TEMP_SUFFIX}")
    old_other_host.write_bytes(b"long gone")
    hour_ago = time.time() - 3600
    os.utime(old_other_host, (hour_ago, hour_ago))
    neighbour = tmp_path / f".other.html.{leftovers.HOST}-999999999{leftovers.TEMP_SUFFIX}"
    neighbour.write_bytes(b"another target's")

    assert sorted(leftovers.sweep_temps(target)) == sorted([dead, old_other_host])
    live.unlink()
    temp_of_killed_writer(target)
    if writer == "report -o":
        write_output(target, b"new")
        assert target.read_bytes() == b"new"
    else:
        write_json_atomic(target, {"new": True})
        assert target.read_text().startswith("{")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [target.name, other_host.name, neighbour.name]
    )


def test_a_killed_makers_scratch_folder_goes_with_the_next_and_a_live_ones_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    prefix = "hpubench-test-scratch-"
    make = f"leftovers.Scratch({prefix!r}).path\n(made / 'a-file').write_text('x')"
    dead = killed_child(make, env)
    assert (dead / "a-file").exists() and dead.parent == tmp_path
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDING.format(make=make)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        held = Path(holder.stdout.readline().strip())
        older = tmp_path / f"{prefix}made-by-an-older-hpubench"  # no lock file: not judged
        older.mkdir()
        with leftovers.Scratch(prefix) as mine:
            assert sorted(tmp_path.iterdir()) == sorted([held, older, mine.path])
            assert (held / "a-file").exists()
        assert not mine.path.exists()
    finally:
        holder.stdin.close()
        holder.wait()
    assert holder.returncode == 0
    assert leftovers.sweep_scratch(prefix) == [held]  # its maker exited without removing it
    assert list(tmp_path.iterdir()) == [older]
