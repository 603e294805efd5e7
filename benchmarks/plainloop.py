"""A plain training script: what a user writes, run as a fresh process, importing nothing of hpubench's
harness.

The model definitions come from ``workloads/`` (the same classes hpubench trains, so the work is the
same; its hf module imports one small pure helper of hpubench that names model directories, and nothing
that sets a heap, a thread count or a device). Nothing is tuned: glibc's heap and torch's threads are
whatever this process's environment gives, which is the point (``benchmarks/agreement.py`` sets the
environment for each condition). Same seed, the same four synthetic batches cycled in order, and the same
optimizer as a cell. Timed the plain way: one ``perf_counter`` around the measured steps after the
warm-up. A sync before each clock read is the device's own (none on the CPU).

``python benchmarks/plainloop.py WORKLOAD SIZE BATCH WARMUP STEPS [--precision P] [--compile] [--import
MODULE,...] [--step-times]`` prints one JSON line. ``--precision`` is written the way a user writes it with
torch alone: ``bf16-mixed`` and ``16-mixed`` put the forward and loss under ``torch.autocast`` (with
``torch.amp.GradScaler`` for fp16), ``bf16-true`` casts the model and the floating inputs to bfloat16;
``--compile`` wraps the model in ``torch.compile``. ``--import`` first imports the named modules, as a script
importing more than torch does: pandas moves the script past the resize of Python's interned-string table that
a torch-only script of these workloads stays just short of, which changes glibc's heap thresholds
(``docs/measurements.md``, 2026-11-29). ``--step-times`` also reads the clock around each measured step and
prints those times (``benchmarks/verdict_rates.py`` judges them with the cells' own halves test: how often the
host alone makes a window unstable).

Under ``torchrun --nproc-per-node N`` it is the plain data-parallel script: gloo, the model in
``DistributedDataParallel`` with its defaults, each rank's batches seeded by its rank (as a cell's are),
BATCH samples per rank. Rank 0 prints the line: the step times are the slowest rank's own (as a cell's record
merges them) and the speed counts every rank's samples over the slowest rank's window.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's workloads/

import workloads

SEED = 1234  # hpubench.run.cellrun.resolve.SEED and N_BATCHES: agreement.py checks they still match
N_BATCHES = 4
PRECISIONS = ("32-true", "bf16-mixed", "16-mixed", "bf16-true")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="plainloop.py", description="a plain training loop, timed")
    ap.add_argument("workload")
    ap.add_argument("size")
    ap.add_argument("batch", type=int)
    ap.add_argument("warmup", type=int)
    ap.add_argument("steps", type=int)
    ap.add_argument("--precision", choices=PRECISIONS, default="32-true")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--import", dest="imports", default="", metavar="MODULE,...")
    ap.add_argument("--step-times", action="store_true", help="also print each measured step's time")
    a = ap.parse_args(argv)
    extra = [m for m in a.imports.split(",") if m]
    for module in extra:
        importlib.import_module(module)
    rank, world = join_group()
    ranks = gathered(train(a, rank, world), world)
    if rank == 0:
        print(json.dumps({**figures(ranks, a.batch, a.steps), "imported_extra": extra}))
    if world > 1:
        dist.barrier()  # every rank past its last collective before any leaves (``__main__`` below)
    return 0


def train(a: argparse.Namespace, rank: int, world: int) -> dict[str, Any]:
    """The warm-up and the timed steps of this rank: its window, page faults, last loss and step times."""
    name, size, batch, warmup, steps = a.workload, a.size, a.batch, a.warmup, a.steps
    device = torch.device("cpu")
    wl = workloads.get(name)
    torch.manual_seed(SEED)
    model = wl.build_model(size).to(device)
    model.train()
    true_bf16 = a.precision == "bf16-true"
    if true_bf16:
        model = model.to(torch.bfloat16)
    if world > 1:
        model = DistributedDataParallel(model)
    if a.compile:  # under DDP, the module it wraps, as hpubench does (dynamo does not trace DDP's forward)
        if world > 1:
            model.module = torch.compile(model.module)
        else:
            model = torch.compile(model)
    gen = torch.Generator(device=device)
    gen.manual_seed(SEED + rank)
    batches = [wl.make_batch(size, batch, device, gen) for _ in range(N_BATCHES)]
    if true_bf16:
        batches = [tuple(t.to(torch.bfloat16) if t.is_floating_point() else t for t in b) for b in batches]
    params = [p for p in model.parameters() if p.requires_grad]
    if wl.optimizer == "sgd":
        opt: torch.optim.Optimizer = torch.optim.SGD(params, lr=wl.lr, momentum=0.9)
    else:
        opt = torch.optim.AdamW(params, lr=wl.lr)
    step = plain_step(wl, model, opt, a.precision)

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
    return {"elapsed": elapsed, "faults": faults, "loss": float(loss.detach()), "times": times}


def plain_step(wl: Any, model: torch.nn.Module, opt: torch.optim.Optimizer, precision: str) -> Any:
    """One training step as a user writes it for ``precision`` with torch alone."""
    if precision in ("32-true", "bf16-true"):

        def step(b: tuple[torch.Tensor, ...]) -> torch.Tensor:
            opt.zero_grad(set_to_none=True)
            loss = wl.loss(model, b)
            loss.backward()
            opt.step()
            return loss

        return step
    dtype = torch.bfloat16 if precision == "bf16-mixed" else torch.float16
    scaler = torch.amp.GradScaler("cpu") if precision == "16-mixed" else None

    def mixed_step(b: tuple[torch.Tensor, ...]) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cpu", dtype=dtype):
            loss = wl.loss(model, b)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss

    return mixed_step


def figures(ranks: list[dict[str, Any]], batch: int, steps: int) -> dict[str, Any]:
    """The printed figures from every rank's: the speed over all ranks in the slowest rank's window, and that
    rank's step times."""
    slowest = max(ranks, key=lambda r: r["elapsed"])
    out = {
        "samples_per_s": batch * len(ranks) * steps / slowest["elapsed"],
        "minor_faults_per_step": ranks[0]["faults"] / steps,
        "torch_threads": torch.get_num_threads(),
        "ranks": len(ranks),
        "loss_last": sum(r["loss"] for r in ranks) / len(ranks),
        "hpubench_modules": sorted(m for m in sys.modules if m.split(".")[0] == "hpubench"),
    }
    if slowest["times"]:
        out["step_times_s"] = slowest["times"]
    return out


def join_group() -> tuple[int, int]:
    """(rank, world size): torchrun's process group over gloo when it started this script, else (0, 1)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return 0, 1
    dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size()


def gathered(mine: dict[str, Any], world: int) -> list[dict[str, Any]]:
    """Every rank's figures, in rank order, after the timed steps (so no clock reads the exchange)."""
    if world == 1:
        return [mine]
    out: list[Any] = [None] * world
    dist.all_gather_object(out, mine)
    return out


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without the interpreter's teardown, as hpubench's own ranks do: gloo's threads aborted a rank
    # at exit now and then ("terminate called without an active exception"), with the group destroyed
    # first and the DDP model gone too. Nothing is measured after the figures are printed.
    os._exit(code)
