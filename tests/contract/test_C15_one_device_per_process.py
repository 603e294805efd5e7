"""C15: one device per process (gaudi-pytorch-bridge 1.19 ``hpu/__init__.py``, ``bindings.cpp`` "We don't
support index addresed device", ``device.cpp``, ``HPUGuardImpl.h``):
- ``device_count()`` is every module on the host (``synDeviceGetCount``), not narrowed by
  ``HABANA_VISIBLE_MODULES``;
- ``set_device(i)`` acquires nothing; with ``HLS_MODULE_ID`` set it ignores ``i``; with neither variable and
  fewer than 8 modules only 0 is accepted; memory queries check an index against the host-wide count
  after acquiring ("Invalid device id"); the device guard refuses any index but 0;
- a held ``HLS_MODULE_ID`` without ``HABANA_VISIBLE_MODULES`` is replaced by any free module
  ("Proceeding without moduleid"), so a process can run on another card than it asked for.
hpubench narrows the count itself and runs a 2-card cell on the two modules a user made visible."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from contract_doubles import ROOT, double_env, logged

from hpubench.accelerators.hpu.accelerator import HPUAccelerator


def test_the_count_is_every_module_of_the_host(bridge) -> None:
    bridge(HABANA_VISIBLE_MODULES="4,5")
    from habana_frameworks.torch import hpu

    assert hpu.device_count() == 8
    assert HPUAccelerator.device_count() == 2  # what hpubench plans with


def test_index_one_is_refused_where_the_bridge_refuses_it(bridge) -> None:
    bridge(HPUBENCH_FAKE_HPU_COUNT="4")
    from habana_frameworks.torch import hpu

    with pytest.raises(AssertionError, match="the only supported device idx is 0"):
        hpu.set_device(1)
    with pytest.raises(RuntimeError, match=r"habana active device: 1 != 0"):
        torch.ones(2, device="hpu:1")
    with pytest.raises(AssertionError, match=r"^Invalid device id$"):
        hpu.memory_stats(4)


def test_with_hls_module_id_the_index_is_ignored(bridge) -> None:
    bridge(HABANA_VISIBLE_MODULES="4,5", HLS_MODULE_ID="5")
    from habana_frameworks import _cards
    from habana_frameworks.torch import hpu

    hpu.set_device(0)
    hpu.synchronize()
    assert _cards.held_module() == 5


def test_a_held_module_is_silently_replaced_without_a_visible_list(tmp_path) -> None:
    log = tmp_path / "calls.log"
    code = (
        "from habana_frameworks.torch import hpu; from habana_frameworks import _cards; "
        "hpu.synchronize(); print(_cards.held_module())"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code + "; import sys; sys.stdin.readline()"],
        env=double_env(HLS_MODULE_ID="2"),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "2"
        env = double_env(HLS_MODULE_ID="2", HPUBENCH_FAKE_HPU_CALL_LOG=str(log))
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() != "2"  # another card than it asked for
        assert any("Proceeding without moduleid" in line for line in logged(log, "bridge.warn"))
    finally:
        holder.kill()
        holder.wait(timeout=60)


@pytest.mark.slow
def test_a_run_under_visible_modules_4_5_plans_and_runs_two_cards_on_them(tmp_path) -> None:
    """The issue's "done when": ``hpubench run`` under ``HABANA_VISIBLE_MODULES=4,5`` on the strict double."""
    log = tmp_path / "calls.log"
    env = double_env(HABANA_VISIBLE_MODULES="4,5", HPUBENCH_FAKE_HPU_CALL_LOG=str(log))
    out = tmp_path / "run"
    args = ["-w", "mlp", "--size", "tiny", "-a", "hpu", "--mode", "eager", "--devices", "1,2,4"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hpubench",
            "run",
            *args,
            "--warmup-steps",
            "1",
            "--steps",
            "2",
            "--out",
            str(out),
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    recs = {r["cell"]["devices"]: r for r in map(json.loads, (out / "cells.jsonl").read_text().splitlines())}
    assert recs[2]["status"] == "ok" and recs[1]["status"] == "ok", {d: r["reason"] for d, r in recs.items()}
    assert recs[4]["status"] == "skipped" and "2" in recs[4]["reason"], recs[4]["reason"]
    assert sorted(set(logged(log, "card.acquire"))) == ["module=4", "module=5"]
