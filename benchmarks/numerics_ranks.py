"""How far a correct data-parallel cell's mean rank loss strays from its one-device replay (the numerics
reference of a cell of several ranks, ``hpubench.run.cellrun.rankref``).

Run with ``python benchmarks/numerics_ranks.py [--ranks 2] [--seeds 3] [--workloads mlp,gpt]``. For each
workload at size tiny, each seed and each precision (32-true, bf16-mixed), ``--ranks`` CPU processes train
one DDP model (gloo) from the seeded weights, each on its own batches (seed + rank), as a cell's ranks do;
rank 0 then trains the 32-true eager replay on one device (``reference.trajectory`` with ``ranks``) and
prints ``numerics.deviation`` between the ranks' mean loss and the replay's. The all-reduce sums the
gradients in another order than one device's backward, so 32-true shows that reordering alone. Loss
values are not timings: a busy machine does not change them. The figures are in docs/measurements.md.
"""

from __future__ import annotations

import argparse
import gc
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

import workloads
from hpubench import accelerators
from hpubench.analysis import numerics
from hpubench.precision import apply as precision
from hpubench.run.batches import synthetic_batches
from hpubench.run.cellrun.reference import concat_ranks, trajectory
from hpubench.run.cellrun.resolve import N_BATCHES, SEED
from hpubench.run.trainstep import make_optimizer, step_factory

PRECISIONS = ("32-true", "bf16-mixed")


def rank_losses(name: str, seed: int, precision_name: str, rank: int) -> list[float]:
    """This rank's first losses of one DDP model trained as a cell's rank trains it."""
    acc = accelerators.get("cpu")(0)
    device = acc.torch_device()
    workload = workloads.get(name)
    batch = workload.sizes["tiny"].batch_size
    torch.manual_seed(seed)
    model = workload.build_model("tiny").to(device)
    prepared = precision.prepare(precision_name, model, acc)
    net = DistributedDataParallel(prepared.model)
    net.train()
    drawn = synthetic_batches(workload, "tiny", batch, device, acc.generator_device(), seed + rank, N_BATCHES)
    cast = [precision.cast_batch(b, prepared.input_dtype) for b in drawn]
    step = step_factory(workload, make_optimizer(workload, net, capturable=False), prepared, acc)(net)
    return [float(step(cast[i % len(cast)]).item()) for i in range(numerics.STEPS_COMPARED)]


def worker(rank: int, world: int, names: list[str], seeds: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    acc = accelerators.get("cpu")(0)
    for name in names:
        workload = workloads.get(name)
        batch = workload.sizes["tiny"].batch_size
        for k in range(seeds):
            seed = SEED + 1000 * k
            ref = None
            if rank == 0:
                per_rank = [
                    synthetic_batches(
                        workload,
                        "tiny",
                        batch,
                        acc.torch_device(),
                        acc.generator_device(),
                        seed + r,
                        N_BATCHES,
                    )
                    for r in range(world)
                ]
                ref = trajectory(
                    workload, "tiny", acc, acc.torch_device(), concat_ranks(per_rank), seed=seed, ranks=world
                )
            for precision_name in PRECISIONS:
                mine = rank_losses(name, seed, precision_name, rank)
                every: list[list[float]] = [[] for _ in range(world)]
                dist.all_gather_object(every, mine)
                if rank == 0 and ref is not None:
                    mean = [sum(r[i] for r in every) / world for i in range(len(mine))]
                    dev, at = numerics.deviation(mean, ref)
                    label = f"{name:6} seed {seed:5}  {world} ranks {precision_name:10}"
                    print(f"{label} deviation {dev:.3g} at step {at}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    gc.collect()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workloads", default="mlp,gpt")
    args = ap.parse_args()
    mp.spawn(worker, args=(args.ranks, args.workloads.split(","), args.seeds), nprocs=args.ranks)


if __name__ == "__main__":
    main()
