"""C3: a child forked after its parent used the Habana runtime cannot use the device.

Each case is a fresh interpreter with the double on its path that forks once; the child reports what its
device calls did. Detection (``is_available``, ``device_count``) opens a Synapse session (bridge
``device.cpp``), so it counts as use: the double refuses the device to a child forked after it (its strict
reading; Synapse itself logs "synapse is forked while it is active"). Detection never raises, in the child
neither. ``set_device`` acquires nothing (it only picks ``HLS_MODULE_ID``). Whether a child forked from a
process that only *loaded* the bridge may use the device is not settled: ``HPUBENCH_FAKE_HPU_FORK_AFTER_LOAD``
chooses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

FAKES = Path(__file__).resolve().parents[1] / "fakes"

DRIVER = textwrap.dedent(
    """
    import json, os, sys
    import torch

    # A device call the parent makes before forking, "none", or "unloaded" (the bridge is not imported
    # before the fork: with PT_HPU_AUTOLOAD=0 the child is the first to load it).
    before_fork = sys.argv[1]
    if before_fork != "unloaded":
        from habana_frameworks.torch import hpu
    if before_fork not in ("none", "unloaded"):
        getattr(hpu, before_fork)(*([0] if before_fork == "set_device" else []))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        from habana_frameworks.torch import hpu

        out = {"is_available": hpu.is_available(), "device_count": hpu.device_count()}
        for call in ("synchronize", "memory_stats", "get_device_name"):
            try:
                getattr(hpu, call)()
                out[call] = "ok"
            except RuntimeError as exc:
                out[call] = str(exc)
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    child = json.loads(os.fdopen(r).read())
    os.waitpid(pid, 0)
    if before_fork != "unloaded":
        hpu.synchronize()  # the parent keeps its device either way
    print(json.dumps(child))
    """
)


def _fork_child(before_fork: str, **env_extra: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT_HPU", "HPUBENCH_FAKE"))}
    env.update(PYTHONPATH=os.pathsep.join([str(FAKES), env.get("PYTHONPATH", "")]), **env_extra)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, before_fork],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "before_fork",
    ["synchronize", "memory_stats", "get_device_name", "is_available", "device_count", "set_device"],
)
def test_a_child_forked_after_initialisation_or_detection_cannot_use_the_device(before_fork: str) -> None:
    child = _fork_child(before_fork)
    assert child["is_available"] is True and child["device_count"] == 8
    for call in ("synchronize", "memory_stats", "get_device_name"):
        assert "forked" in str(child[call]) and "C3" in str(child[call]), (call, child[call])


@pytest.mark.parametrize("before_fork", ["none"])
def test_a_child_forked_after_loading_or_set_device_only_may_use_the_device(before_fork: str) -> None:
    child = _fork_child(before_fork)
    assert [child[c] for c in ("synchronize", "memory_stats", "get_device_name")] == ["ok"] * 3


def test_the_strict_reading_refuses_a_child_forked_after_loading_only() -> None:
    child = _fork_child("none", HPUBENCH_FAKE_HPU_FORK_AFTER_LOAD="refuse")
    assert child["is_available"] is True
    for call in ("synchronize", "memory_stats", "get_device_name"):
        assert "was loaded in process" in str(child[call]), (call, child[call])


def test_a_child_that_loads_the_bridge_itself_may_use_the_device_under_either_reading() -> None:
    """What hpubench's fork server relies on: torch imported before the fork, the bridge after it."""
    child = _fork_child("unloaded", HPUBENCH_FAKE_HPU_FORK_AFTER_LOAD="refuse", PT_HPU_AUTOLOAD="0")
    assert [child[c] for c in ("synchronize", "memory_stats", "get_device_name")] == ["ok"] * 3
