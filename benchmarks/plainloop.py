"""A plain training script: what a user writes, run as a fresh process, importing nothing of hpubench's
harness.

The model definitions come from ``workloads/`` (the same classes hpubench trains, so the work is the
same; its hf module imports one small pure helper of hpubench that names model directories, and nothing
that sets a heap, a thread count or a device). Nothing is tuned: glibc's heap and torch's threads are
whatever this process's environment gives, which is the point (``benchmarks/agreement.py`` sets the
environment for each condition). Same seed, the same four synthetic batches cycled in order, and the same
optimizer as a cell. Timed the plain way: one ``perf_counter`` around the measured steps after the
warm-up. A sync before each clock read is the device's own (none on the CPU).

``python benchmarks/plainloop.py WORKLOAD SIZE BATCH WARMUP STEPS [--import MODULE,...] [--step-times]``
prints one JSON line. ``--import`` first imports the named modules, as a script importing more than torch
does: pandas moves the script past the resize of Python's interned-string table that a torch-only script of
these workloads stays just short of, which changes glibc's heap thresholds (``docs/measurements.md``,
2026-11-29). ``--step-times`` also reads the clock around each measured step and prints those times
(``benchmarks/verdict_rates.py`` judges them with the cells' own halves test: how often the host alone
makes a window unstable).
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's workloads/

import workloads

SEED = 1234  # hpubench.run.cellrun.resolve.SEED and N_BATCHES: agreement.py checks they still match
N_BATCHES = 4


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="plainloop.py", description="a plain training loop, timed")
    ap.add_argument("workload")
    ap.add_argument("size")
    ap.add_argument("batch", type=int)
    ap.add_argument("warmup", type=int)
    ap.add_argument("steps", type=int)
    ap.add_argument("--import", dest="imports", default="", metavar="MODULE,...")
    ap.add_argument("--step-times", action="store_true", help="also print each measured step's time")
    a = ap.parse_args(argv)
    name, size, batch, warmup, steps = a.workload, a.size, a.batch, a.warmup, a.steps
    extra = [m for m in a.imports.split(",") if m]
    for module in extra:
        importlib.import_module(module)
    device = torch.device("cpu")
    wl = workloads.get(name)
    torch.manual_seed(SEED)
    model = wl.build_model(size).to(device)
    model.train()
    gen = torch.Generator(device=device)
    gen.manual_seed(SEED)
    batches = [wl.make_batch(size, batch, device, gen) for _ in range(N_BATCHES)]
    params = [p for p in model.parameters() if p.requires_grad]
    if wl.optimizer == "sgd":
        opt: torch.optim.Optimizer = torch.optim.SGD(params, lr=wl.lr, momentum=0.9)
    else:
        opt = torch.optim.AdamW(params, lr=wl.lr)

    def step(b: tuple[torch.Tensor, ...]) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = wl.loss(model, b)
        loss.backward()
        opt.step()
        return loss

    for i in range(warmup):
        step(batches[i % N_BATCHES])
    faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    times: list[float] = []
    t0 = time.perf_counter()
    if a.step_times:  # a loop of its own: without the flag, no clock is read between the steps
        for i in range(steps):
            t = time.perf_counter()
            loss = step(batches[(warmup + i) % N_BATCHES])
            times.append(time.perf_counter() - t)
    else:
        for i in range(steps):
            loss = step(batches[(warmup + i) % N_BATCHES])
    elapsed = time.perf_counter() - t0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0
    harness = sorted(m for m in sys.modules if m.split(".")[0] == "hpubench")
    print(
        json.dumps(
            {
                "samples_per_s": batch * steps / elapsed,
                "minor_faults_per_step": faults / steps,
                "torch_threads": torch.get_num_threads(),
                "loss_last": float(loss.detach()),
                "imported_extra": extra,
                "hpubench_modules": harness,
                **({"step_times_s": times} if a.step_times else {}),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
