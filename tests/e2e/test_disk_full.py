"""Disk full (issue 14 item 3): ENOSPC in the store's append ends the run cleanly, and a resume finishes it.

The fault is injected in a real `hpubench run` process: a sitecustomize on its PYTHONPATH patches
``os.write`` so that, after two records, the next write to cells.jsonl is cut short and the one after it
fails with ENOSPC, as a filling disk does. The records written before must load, the file must end on a
line boundary, stderr must say in one line that the disk is full and how to resume, and running that
command must finish the run with every cell recorded once.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ARGS = ["run", "-w", "mlp,gpt", "-p", "32-true,bf16-mixed", "--steps", "3", "--warmup-steps", "1"]

INJECT = textwrap.dedent(
    """
    import errno
    import os

    _AFTER = int(os.environ.get("HPUBENCH_TEST_ENOSPC_AFTER", "-1"))
    if _AFTER >= 0:
        _real_write = os.write
        _state = {"lines": 0, "torn": False}

        def _write(fd, data):
            try:
                name = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                name = ""
            if name.endswith("cells.jsonl"):
                if _state["lines"] >= _AFTER:
                    if not _state["torn"]:
                        _state["torn"] = True
                        return _real_write(fd, bytes(data)[: len(data) // 2])
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                _state["lines"] += 1
            return _real_write(fd, data)

        os.write = _write
    """
)


def hpubench(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpubench", *args], capture_output=True, text=True, timeout=400, env=env
    )


def lines(run: Path) -> list[str]:
    return (run / "cells.jsonl").read_text().splitlines()


@pytest.mark.slow
def test_disk_full_ends_the_run_cleanly_and_resume_finishes_it(tmp_path: Path) -> None:
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(INJECT)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(inject), os.environ.get("PYTHONPATH", "")]),
        "HPUBENCH_TEST_ENOSPC_AFTER": "2",
    }
    run = tmp_path / "run"
    full = hpubench([*ARGS, "-o", str(run)], env)
    assert full.returncode == 2, full.stderr[-3000:]
    assert "Traceback" not in full.stderr, full.stderr[-3000:]
    said = [ln for ln in full.stderr.splitlines() if "disk is full" in ln]
    assert len(said) == 1 and said[0].startswith("error: "), full.stderr[-3000:]
    assert "--resume" in said[0]

    raw = (run / "cells.jsonl").read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 2  # the two records, no torn third
    before = lines(run)
    assert all(json.loads(ln)["status"] == "ok" for ln in before)
    readable = hpubench(["results", str(run), "--format", "json"], dict(os.environ))
    assert readable.returncode == 0, readable.stderr
    assert len(json.loads(readable.stdout)) == 2

    command = shlex.split(re.search(r"resume with: (.*)$", said[0]).group(1))
    assert command[0] == "hpubench" and "--resume" in command
    resumed = hpubench(command[1:], dict(os.environ))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = lines(run)
    keys = [json.loads(ln)["key"] for ln in after]
    assert len(keys) == len(set(keys)) == 4
    assert after[:2] == before
