"""The bare loop: a hand-written PyTorch training loop doing a cell's work, with none of hpubench around it.

The yardstick of two benchmarks: ``overhead.py`` sets it against a cell (harness/bare, in a forked child)
and ``trust.py`` runs it in fresh processes for the machine's own run-to-run spread, the floor no harness
can measure below. Same model and seed as hpubench, the same synthetic batches cycled in the same order,
same optimizer and learning rate, and the threads (and affinity) hpubench's CPU thread policy gives a
one-process cell (``HPUBENCH_CPU_THREADS``, default cores-1; a user's ``OMP_NUM_THREADS`` wins on both
sides), and the same heap policy (``HPUBENCH_MALLOC``, default steady). Timed the simplest honest way: one
``perf_counter`` around the measured loop after the warm-up, with the device synchronised (the accelerator's
own hook) before the clock starts and before it stops: a no-op on the CPU, whose ops are synchronous; on an
asynchronous device (CUDA) the only two syncs the loop makes, so its steps overlap host and device freely.

``python benchmarks/bareloop.py WORKLOAD SIZE BATCH WARMUP STEPS [BLOCKS]`` prints the result as one JSON
line.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

# torch and hpubench are imported inside bare_loop: overhead.py imports this module before it sets
# OMP_NUM_THREADS from --threads, which must happen before torch loads.


def build_training(
    workload_name: str, size: str, batch_size: int, accelerator: str = "cpu"
) -> tuple[Callable[[tuple[Any, ...]], Any], list[tuple[Any, ...]], Callable[[], None]]:
    """The step and batches a cell of this workload trains on (same model, seed, data and optimizer), and
    the device's synchronize.

    ``accelerator`` is a registered accelerator's name (cpu, cuda, hpu, or a plugin's); device 0. Its own
    hooks set the host threads a one-process cell gets (on the CPU: ``HPUBENCH_CPU_THREADS``; threads must
    be set before the first op) and make the device current, after the heap policy (``HPUBENCH_MALLOC``)
    is applied, before anything is allocated, as in a cell's worker. The step returns the loss tensor.
    """
    import torch

    import workloads
    from hpubench import accelerators
    from hpubench.measure.heap import heap_policy, plan_heap
    from hpubench.measure.heap_probe import apply_heap_plan
    from hpubench.run.worker import N_BATCHES, SEED  # the same seed and batch count as hpubench, kept in sync

    apply_heap_plan(plan_heap(heap_policy(os.environ), os.environ))  # the heap a cell's process has
    acc = accelerators.get(accelerator)(0)
    acc.apply_threads(1, 0)  # in the worker's order: heap, then threads, then the device
    acc.setup()
    device = acc.torch_device()
    wl = workloads.get(workload_name)
    torch.manual_seed(SEED)
    model = wl.build_model(size).to(device)
    model.train()
    gen = torch.Generator(device=device)
    gen.manual_seed(SEED)
    batches = [wl.make_batch(size, batch_size, device, gen) for _ in range(N_BATCHES)]
    params = [p for p in model.parameters() if p.requires_grad]
    if wl.optimizer == "sgd":
        opt: torch.optim.Optimizer = torch.optim.SGD(params, lr=wl.lr, momentum=0.9)
    else:
        opt = torch.optim.AdamW(params, lr=wl.lr)

    def step(batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = wl.loss(model, batch)
        loss.backward()
        opt.step()
        return loss

    return step, batches, acc.synchronize


def bare_loop(
    workload_name: str,
    size: str,
    batch_size: int,
    warmup: int,
    steps: int,
    blocks: int = 1,
    accelerator: str = "cpu",
) -> dict[str, Any]:
    """Train ``steps`` steps after ``warmup`` untimed ones; samples/s = batch x steps / elapsed.

    ``blocks`` > 1 times that many blocks of ``steps`` steps one after another in this one process
    (``blocks_samples_per_s``): their spread is the machine's drift alone, without a new process's draw.
    ``accelerator`` is a registered accelerator's name (cpu, cuda, hpu, or a plugin's); device 0.
    """
    import torch

    step, batches, sync = build_training(workload_name, size, batch_size, accelerator)
    n = len(batches)
    for i in range(warmup):
        step(batches[i % n])
    per_block = []
    faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for b in range(blocks):
        sync()
        t0 = time.perf_counter()
        for i in range(steps):
            loss = step(batches[(warmup + b * steps + i) % n])
        sync()
        per_block.append(time.perf_counter() - t0)
    result = {
        "elapsed_s": per_block[0],
        "samples_per_s": batch_size * steps / per_block[0],
        "loss_last": float(loss.detach()),
        "torch_threads": torch.get_num_threads(),
        # page faults a step are the allocator's churn (hpubench.measure.heap): the figure to look at first
        "minor_faults_per_step": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0)
        / (blocks * steps),
    }
    if blocks > 1:
        result["blocks_samples_per_s"] = [batch_size * steps / e for e in per_block]
    return result


def main(argv: list[str]) -> int:
    if len(argv) not in (5, 6):
        print("usage: bareloop.py WORKLOAD SIZE BATCH WARMUP STEPS [BLOCKS]", file=sys.stderr)
        return 2
    name, size, batch, warmup, steps = argv[:5]
    blocks = int(argv[5]) if len(argv) == 6 else 1
    print(json.dumps(bare_loop(name, size, int(batch), int(warmup), int(steps), blocks)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
