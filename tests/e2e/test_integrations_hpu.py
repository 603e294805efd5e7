"""The trainer callbacks on the HPU test double (tests/fakes): a recorded run on an ``hpu`` device is labelled
``(test double)`` like every HPU record made here, and Lightning's own HPU accelerator (lightning-habana)
is tried beside the double; where it cannot import, the test says why instead of passing."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKES = ROOT / "tests" / "fakes"
CLEARED = ("PT_HPU", "HABANA_", "HLS_", "HPUBENCH_FAKE", "HPUBENCH_CPU_THREADS", "HPUBENCH_MALLOC", "OMP_")
pytestmark = pytest.mark.slow

# What a trainer's callback does, without the trainer: the shared recorder, on the double's HPU in eager
# mode, a real training step per optimizer step, then the record written as the callbacks write it.
RECORDED = """
import sys, torch
import habana_frameworks.torch.core as htcore
from hpubench.integrations import runrecord
from hpubench.integrations.recorder import StepRecorder, TrainerFacts

facts = TrainerFacts(workload="lightning:Tiny", framework="test", trainer="test", accelerator="hpu",
                     device_index=0, devices=1, nodes=1, precision="32-true", mode="eager", strategy="single")
rec = StepRecorder(facts, warmup_steps=2)
model = torch.nn.Linear(16, 4).to("hpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 16).to("hpu")
for _ in range(12):
    rec.step_begin()
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    rec.step_end(loss, 8)
runrecord.write(sys.argv[1], runrecord.build_record(rec))
"""


def _env(box: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(FAKES)])
    env["TMPDIR"] = str(box)  # the double's card locks and device runtime stay this test's own
    env["PT_HPU_LAZY_MODE"] = "0"
    return env


def test_a_recorded_hpu_run_says_test_double(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-c", RECORDED, str(out)],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (record,) = [json.loads(x) for x in (out / "cells.jsonl").read_text().splitlines()]
    assert record["status"] == "ok" and record["cell"]["accelerator"] == "hpu"
    # marked as every HPU record made on the double is (the report's banner and hatching read it)
    assert "(test double)" in record["runtime"]["software"]["habana_frameworks"]
    assert record["runtime"]["device_name"] and record["metrics"]["measured_steps"] == 10
    assert "synchronised" in record["runtime"]["timing"]  # the HPU's host clock: a sync at each step's end


LIGHTNING_HABANA = """
import sys
import pytorch_lightning as pl
from lightning_habana import HPUAccelerator
from lit_mlp import LitMLP
from hpubench.integrations.lightning import HpubenchCallback

pl.Trainer(accelerator=HPUAccelerator(), devices=1, max_steps=12, logger=False, enable_checkpointing=False,
           callbacks=[HpubenchCallback(out=sys.argv[1])]).fit(LitMLP())
"""


def test_lightning_habana_trainer_on_the_double_or_why_not(tmp_path: Path) -> None:
    if importlib.util.find_spec("lightning_habana") is None:
        pytest.skip(
            "lightning-habana is not installed (pip install lightning-habana): its HPUAccelerator is untried"
        )
    env = _env(tmp_path)
    probe = subprocess.run(
        [sys.executable, "-c", "import habana_frameworks.torch, lightning_habana"],
        env=env,
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        why = probe.stderr.strip().splitlines()[-1]
        pytest.skip(f"lightning-habana does not import beside the HPU double: {why}")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "docs" / "examples"), env["PYTHONPATH"]])
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-c", LIGHTNING_HABANA, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (record,) = [json.loads(x) for x in (out / "cells.jsonl").read_text().splitlines()]
    assert record["cell"]["accelerator"] == "hpu"
    assert "(test double)" in record["runtime"]["software"]["habana_frameworks"]
