"""Do the trainer callbacks and hpubench's cells agree, and what does the trainer's own loop cost?
(``make bench``; issue 34.)

Two models, each trained by four contenders, every one a fresh process, interleaved over rounds (the order
rotates each round), under one condition for all: ``plain`` (glibc's own heap, torch's own threads: a
user's process as it is) or ``tuned`` (the settings ``hpubench doctor`` gives a user: glibc's thresholds and
one thread, through the environment; the cell with ``--condition tuned``):

- ``callback``: the framework's Trainer with hpubench's callback; its record's figure.
- ``trainer``: the same Trainer without it, timed by a stopwatch callback (one ``perf_counter`` at each
  optimizer step's end, the rest of the run left alone): ``callback / trainer`` is what recording costs
  and how differently it counts (its epoch-end pauses are left out).
- ``cell``: ``hpubench run`` of the same model (``-w lightning:docs/examples/lit_mlp.py:LitMLP``, or
  ``-w hf:gpt2`` tiny, whose model the HF scripts build with ``workloads.get``), the same condition.
- ``loop+loader``: a plain loop (no Trainer, no hpubench) over the same model and the same dataloader the
  Trainer reads: what the trainer's loop adds is ``callback / loop+loader``.
- ``loop``: the plain loop over 4 batches drawn once, as a cell trains: ``cell / loop`` is the harness's
  own agreement, ``loop+loader / loop`` the data loading's cost.

Figures are the median over rounds of each pair's ratio within a round, with a distribution-free interval
(:mod:`hpubench.analysis.stats.medianci`). Never run beside other work.

``python benchmarks/trainer_agreement.py [--rounds 5] [--models lightning,hf] [--condition plain] [--json F]``
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import agreement  # noqa: E402

from hpubench.analysis.stats.medianci import median_interval  # noqa: E402
from hpubench.measure.heap import STEADY_ENV  # noqa: E402

EXAMPLES = ROOT / "docs" / "examples"
SIDES = ("callback", "trainer", "cell", "loop+loader", "loop")
# (warm-up steps, measured steps): about 1.5 s of measured steps each on the 2-core dev VM
STEPS = {"lightning": (20, 1000), "hf": (10, 150)}
CLEARED = ("HPUBENCH_", "MALLOC_", "OMP_", "GLIBC_TUNABLES")
# What hpubench doctor tells a user to export for the tuned figure (hpubench.measure.heap; 1 thread: the
# cores-1 policy on this 2-core VM)
TUNED_ENV = {**STEADY_ENV, "OMP_NUM_THREADS": "1"}

LIGHTNING_CALLBACK = """
import json, sys, time
import pytorch_lightning as pl
from lit_mlp import LitMLP
warm, steps, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if out == "stopwatch":
    class Stopwatch(pl.Callback):
        marks = []
        def on_train_batch_end(self, *args):
            self.marks.append(time.perf_counter())
    cb = Stopwatch()
else:
    from hpubench.integrations.lightning import HpubenchCallback
    cb = HpubenchCallback(out=out, warmup_steps=warm)
pl.Trainer(max_steps=warm + steps, accelerator="cpu", devices=1, callbacks=[cb], logger=False,
           enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False).fit(LitMLP())
if out == "stopwatch":
    print(json.dumps({"samples_per_s": 64 * steps / (cb.marks[-1] - cb.marks[warm - 1])}))
"""

HF_MODEL = """
import torch
import workloads
torch.manual_seed(1234)
model = workloads.get("hf:gpt2").build_model("tiny")  # the cell's own model: the same configuration
ids = torch.randint(0, 1024, (1024, 64), generator=torch.Generator().manual_seed(0))
data = [{"input_ids": row, "labels": row} for row in ids]
"""

HF_CALLBACK = (
    HF_MODEL
    + """
import json, sys, time
from transformers import Trainer, TrainerCallback, TrainingArguments
warm, steps, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if out == "stopwatch":
    class Stopwatch(TrainerCallback):
        marks = []
        def on_step_end(self, *args, **kwargs):
            self.marks.append(time.perf_counter())
    cb = Stopwatch()
else:
    from hpubench.integrations.transformers import HpubenchCallback
    cb = HpubenchCallback(out=out, warmup_steps=warm)
args = TrainingArguments(output_dir="hf-out", max_steps=warm + steps, per_device_train_batch_size=8,
                         report_to=[], save_strategy="no", logging_strategy="no", disable_tqdm=True,
                         learning_rate=1e-4)
Trainer(model=model, args=args, train_dataset=data, callbacks=[cb]).train()
if out == "stopwatch":
    print(json.dumps({"samples_per_s": 8 * steps / (cb.marks[-1] - cb.marks[warm - 1])}))
"""
)

# A plain loop: the model's own step, timed as one block after the warm-up (plainloop.py's way).
LOOP = """
import json, sys, time, torch
warm, steps, loader = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "loader"
{build}
def batches():
    while True:
        yield from source
if not loader:
    fixed = [b for b, _ in zip(batches(), range(4))]
    stream = (fixed[i % 4] for i in range(10**9))
else:
    stream = batches()
for i in range(warm):
    step(next(stream))
import resource
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
t0 = time.perf_counter()
for i in range(steps):
    loss = step(next(stream))
elapsed = time.perf_counter() - t0
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / steps
print(json.dumps({{"samples_per_s": {batch} * steps / elapsed, "faults_per_step": faults}}))
"""
LIGHTNING_BUILD = """
from lit_mlp import LitMLP
torch.manual_seed(1234)
module = LitMLP()
opt = module.configure_optimizers()
source = module.train_dataloader()
def step(batch):
    opt.zero_grad(set_to_none=True)
    loss = module.training_step(batch, 0)
    loss.backward()
    opt.step()
    return loss
"""
HF_BUILD = (
    HF_MODEL
    + """
from torch.utils.data import DataLoader
from transformers import default_data_collator
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
model.train()
source = DataLoader(data, batch_size=8, shuffle=True, collate_fn=default_data_collator)
def step(batch):
    opt.zero_grad(set_to_none=True)
    loss = model(**batch).loss
    loss.backward()
    opt.step()
    return loss
"""
)


def env(condition: str, side: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED)}
    if condition == "tuned" and side != "cell":  # a cell sets its own (--condition tuned)
        out.update(TUNED_ENV)
    out["PYTHONPATH"] = os.pathsep.join([str(EXAMPLES), str(ROOT)])
    out["HPUBENCH_NO_PROGRESS"] = "1"
    return out


def _record_figure(run: Path) -> dict[str, Any]:
    lines = [json.loads(x) for x in (run / "cells.jsonl").read_text().splitlines() if x.strip()]
    ok = [r for r in lines if r["status"] == "ok"]
    if not ok:
        raise SystemExit(f"{run}: no ok record: {[r.get('reason') for r in lines]}")
    r = ok[-1]
    faults = (r["runtime"].get("page_faults_measured") or {}).get("minor")
    per_step = faults / r["metrics"]["measured_steps"] if faults is not None else None
    return {
        "samples_per_s": r["metrics"]["samples_per_s"],
        "quality": r["quality"],
        "faults_per_step": per_step,
    }


def run_side(model: str, side: str, folder: Path, rnd: int, condition: str) -> dict[str, Any]:
    warm, steps = STEPS[model]
    out = folder / f"{model}-{side.replace('+', '-')}-{rnd}"
    if side in ("callback", "trainer"):
        code = LIGHTNING_CALLBACK if model == "lightning" else HF_CALLBACK
        argv = [
            sys.executable,
            "-c",
            code,
            str(warm),
            str(steps),
            str(out) if side == "callback" else "stopwatch",
        ]
    elif side == "cell":
        workload = f"lightning:{EXAMPLES / 'lit_mlp.py'}:LitMLP" if model == "lightning" else "hf:gpt2"
        argv = [sys.executable, "-m", "hpubench", "run", "-w", workload, "--condition", condition, "--steps",
                str(steps), "--warmup-steps", str(warm), "--out", str(out)]  # fmt: skip
    else:
        build, batch = (LIGHTNING_BUILD, 64) if model == "lightning" else (HF_BUILD, 8)
        code = LOOP.format(build=build, batch=batch)
        argv = [sys.executable, "-c", code, str(warm), str(steps), "loader" if "loader" in side else "fixed"]
    proc = subprocess.run(
        argv, cwd=folder, env=env(condition, side), capture_output=True, text=True, timeout=900
    )
    if proc.returncode != 0:
        raise SystemExit(f"{model} {side} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    if side in ("callback", "cell"):
        return _record_figure(out)
    return json.loads(proc.stdout.strip().splitlines()[-1])


PAIRS = (
    ("callback", "cell", "callback / cell"),
    ("callback", "trainer", "callback / trainer: recording"),
    ("callback", "loop+loader", "callback / loop+loader: the trainer's loop"),
    ("loop+loader", "loop", "loop+loader / loop: the data loading"),
    ("cell", "loop", "cell / loop: the harness"),
)


Results = dict[tuple[str, str], list[dict[str, Any]]]


def summarise(results: Results, models: list[str]) -> list[dict[str, Any]]:
    rows = []
    for model in models:
        medians = {s: statistics.median(r["samples_per_s"] for r in results[(model, s)]) for s in SIDES}
        for a, b, label in PAIRS:
            ratios = agreement.ratios(results[(model, a)], results[(model, b)])
            ci = median_interval(ratios)
            rows.append(
                {
                    "model": model,
                    "pair": label,
                    "ratio": ci.median,
                    "interval": [ci.low, ci.high],
                    "coverage": ci.coverage,
                    "rounds": [round(r, 3) for r in ratios],
                    "medians": {a: medians[a], b: medians[b]},
                }
            )
        quality = [r.get("quality") for s in ("callback", "cell") for r in results[(model, s)]]
        rows.append({"model": model, "pair": "verdicts (callback, cell)", "quality": quality})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--models", default="lightning,hf")
    ap.add_argument("--condition", choices=("plain", "tuned"), default="plain")
    ap.add_argument("--json", help="also write the rows and every run here")
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    needs = {"lightning": ("pytorch_lightning",), "hf": ("transformers", "accelerate")}
    for m in list(models):
        missing = [p for p in needs[m] if importlib.util.find_spec(p) is None]
        if missing:
            print(f"note: {', '.join(missing)} not installed; {m} left out", file=sys.stderr)
            models.remove(m)
    results: Results = {}
    with tempfile.TemporaryDirectory(prefix="hpubench-trainers-") as tmp:
        for rnd in range(args.rounds):
            order = SIDES[rnd % len(SIDES) :] + SIDES[: rnd % len(SIDES)]
            for model in models:
                for side in order:
                    r = run_side(model, side, Path(tmp), rnd, args.condition)
                    results.setdefault((model, side), []).append(r)
                    faults = r.get("faults_per_step")
                    shown = "" if faults is None else f"  {faults:8.1f} faults/step"
                    print(
                        f"round {rnd + 1}: {model:9} {side:11} {r['samples_per_s']:12,.1f}{shown}", flush=True
                    )
    rows = summarise(results, models)
    print()
    for row in rows:
        if "ratio" in row:
            lo, hi = row["interval"]
            print(f"{row['model']:9} {row['pair']:45} {row['ratio']:.3f} [{lo:.3f}-{hi:.3f}] {row['rounds']}")
        else:
            print(f"{row['model']:9} {row['pair']:45} {row['quality']}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"rows": rows, "runs": {f"{k[0]}|{k[1]}": v for k, v in results.items()}}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
