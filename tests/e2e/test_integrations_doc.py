"""docs/integrations.md's three snippets, run as written from a copy of docs/examples/ with the real
Lightning Trainer, the real transformers Trainer and the real CLI; then what they wrote, read back by
``results``, ``report``, ``baseline save`` and ``gate``. Plus a Lightning run with gradient accumulation
and a short last batch, whose record must count each step's samples as they were."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrations.md"
HAVE_LIGHTNING = any(importlib.util.find_spec(m) for m in ("lightning", "pytorch_lightning"))
HAVE_HF = all(importlib.util.find_spec(m) for m in ("transformers", "accelerate"))
needs_lightning = pytest.mark.skipif(
    not HAVE_LIGHTNING, reason="Lightning is not installed (pip install 'hpubench[lightning]')"
)
needs_hf = pytest.mark.skipif(
    not HAVE_HF, reason="transformers or accelerate is not installed (pip install 'hpubench[hf]')"
)
pytestmark = pytest.mark.slow


def snippets() -> list[tuple[str, str]]:
    return re.findall(r"```(python|bash)\n(.*?)```", DOC.read_text(), re.S)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HPUBENCH_", "MALLOC_", "OMP_"))}
    # the console script lives beside the interpreter; the snippets import hpubench as a user would
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _run_snippet(index: int, where: Path) -> subprocess.CompletedProcess[str]:
    kind, text = snippets()[index]
    script = where / (f"snippet{index}.py" if kind == "python" else f"snippet{index}.sh")
    script.write_text(text)
    argv = [sys.executable, script.name] if kind == "python" else ["bash", "-e", script.name]
    proc = subprocess.run(argv, cwd=where, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "cells.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("examples")
    shutil.copytree(ROOT / "docs" / "examples", where, dirs_exist_ok=True)
    return where


def test_the_page_has_the_three_snippets() -> None:
    kinds = [k for k, _ in snippets()]
    assert kinds == ["python", "python", "bash"]


def _check_trainer_record(record: dict, workload: str, steps: int, batch: int) -> None:
    assert record["status"] == "ok", record.get("reason")
    assert record["cell"]["workload"] == workload and record["cell"]["size"] == "trainer"
    m = record["metrics"]
    assert m["measured_steps"] + m["warmup_steps"] == steps  # every optimizer step, none lost at pauses
    assert m["warmup_steps"] >= 3 and m["samples_per_step"] == batch
    lo, hi = m["samples_per_s_ci"]
    assert lo < m["samples_per_s"] < hi
    # the figure is the steps' own: samples over the summed step times
    assert m["samples_per_s"] == pytest.approx(
        batch * len(record["step_times_s"]) / sum(record["step_times_s"])
    )
    assert record["quality"] in ("ok", "unstable", "noisy", "interfered", "unmeasured")
    assert record["numerics"] == "unchecked" and "reference" in record["numerics_reasons"][0]
    assert record["runtime"]["trainer"]["ranks_counted"] == 1
    assert record["runtime"]["condition"]["name"] == "plain"
    assert 0 < m["loss_last"] < 20  # the model's real loss, not a placeholder


@needs_lightning
def test_lightning_callback_snippet_writes_a_run_that_every_reader_takes(examples: Path) -> None:
    _run_snippet(0, examples)
    run = examples / "results" / "lit-trainer"
    (record,) = _records(run)
    _check_trainer_record(record, "lightning:LitMLP", steps=150, batch=64)
    assert "trainer" in record["runtime"]["timing"] and record["runtime"]["trainer"]["framework"]

    shown = run_cli("results", str(run), "--wide", cwd=examples)
    assert shown.returncode == 0 and "lightning:LitMLP/trainer/cpu/1x1/32-true" in shown.stdout
    html = examples / "lit.html"
    built = run_cli("report", str(run), "-o", str(html), cwd=examples)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    assert "lightning:LitMLP" in html.read_text()
    saved = run_cli("baseline", "save", str(run), "--name", "lit", "--dir", str(examples / "b"), cwd=examples)
    assert saved.returncode == 0, saved.stderr[-2000:]
    gated = run_cli(
        "gate",
        "--baseline",
        "lit",
        "--baseline-dir",
        str(examples / "b"),
        "--current",
        str(run),
        cwd=examples,
    )
    assert gated.returncode == 0, gated.stdout[-2000:] + gated.stderr[-2000:]


@needs_hf
def test_hf_trainer_callback_snippet_records_the_model_type(examples: Path) -> None:
    _run_snippet(1, examples)
    (record,) = _records(examples / "results" / "hf-trainer")
    _check_trainer_record(record, "hf:gpt2", steps=80, batch=8)
    assert record["runtime"]["trainer"]["model_class"].endswith("GPT2LMHeadModel")


@needs_lightning
def test_lightning_module_runs_over_two_precisions_with_numerics(examples: Path) -> None:
    proc = _run_snippet(2, examples)
    records = _records(examples / "results" / "lit-cells")
    assert [r["cell"]["precision"] for r in records] == ["32-true", "bf16-mixed"]
    for r in records:
        assert r["status"] == "ok" and r["cell"]["workload"] == "lightning:LitMLP"
        assert r["numerics"] in ("ok", "drift"), r["numerics_reasons"]  # compared, never unchecked
        assert r["metrics"]["samples_per_step"] == 64  # the module's dataloader batch
    assert "lightning:LitMLP/tiny/cpu/1x1/bf16-mixed" in proc.stdout


ACCUMULATING = """
import sys
import torch
import {package} as pl
from torch.utils.data import DataLoader, TensorDataset
from hpubench.integrations.lightning import HpubenchCallback


class Lit(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(64, 10)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        # 8192 samples in batches of 100: 81 full batches and one of 92 an epoch
        data = TensorDataset(torch.randn(8192, 64), torch.randint(0, 10, (8192,)))
        return DataLoader(data, batch_size=100)


# 2 micro-batches a step: 41 steps an epoch
trainer = pl.Trainer(max_steps=90, accelerator="cpu", devices=1, accumulate_grad_batches=2,
                     callbacks=[HpubenchCallback(out="results/acc-{package}", warmup_steps=2)], logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Lit())
"""


@pytest.mark.parametrize("package", ["pytorch_lightning", "lightning.pytorch"])
def test_accumulated_steps_and_short_batches_count_their_own_samples(examples: Path, package: str) -> None:
    if importlib.util.find_spec(package.split(".")[0]) is None:
        pytest.skip(f"{package} is not installed (pip install {package.split('.')[0].replace('_', '-')})")
    (examples / "acc.py").write_text(ACCUMULATING.format(package=package))
    argv = [sys.executable, "acc.py"]
    proc = subprocess.run(argv, cwd=examples, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (record,) = _records(examples / "results" / f"acc-{package}")
    m, times = record["metrics"], record["step_times_s"]
    assert m["warmup_steps"] + m["measured_steps"] == 90  # optimizer steps, not micro-batches
    assert record["runtime"]["trainer"]["accumulate_grad_batches"] == 2
    assert record["runtime"]["trainer"]["framework"].startswith(package.split(".")[0])
    # the 41st and 82nd steps hold 100 + 92 samples, both among the measured ones
    short = 2
    total = 200 * (len(times) - short) + 192 * short
    assert m["samples_per_s"] == pytest.approx(total / sum(times))
    assert m["samples_per_step"] == round(total / len(times))
    assert record["cell"]["batch_size"] == m["samples_per_step"]  # a device's samples per optimizer step


RANKS = """
import pytorch_lightning as pl
from lit_mlp import LitMLP
from hpubench.integrations.lightning import HpubenchCallback

if __name__ == "__main__":  # Lightning starts the second rank by running this script again
    trainer = pl.Trainer(max_steps=40, accelerator="cpu", devices=2, strategy="ddp", logger=False,
                         callbacks=[HpubenchCallback(out="results/ddp")], enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(LitMLP())
"""


@needs_lightning
def test_two_ranks_write_one_record_with_every_ranks_samples(examples: Path) -> None:
    (examples / "ddp.py").write_text(RANKS)
    argv = [sys.executable, "ddp.py"]
    proc = subprocess.run(argv, cwd=examples, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (record,) = _records(examples / "results" / "ddp")  # rank 0's, once
    assert record["cell"]["devices"] == 2 and record["cell"]["extra"]["strategy"] == "ddp"
    assert record["runtime"]["trainer"]["ranks_counted"] == 2
    m = record["metrics"]
    assert m["samples_per_step"] == 128 and record["cell"]["batch_size"] == 64  # global; per device
    assert m["measured_steps"] + m["warmup_steps"] == 40
