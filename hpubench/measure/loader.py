"""The host-loader pass: how much of a step is waiting for data rather than computing.

The plain measured steps cycle through batches already on the device, so they measure the device and
nothing else (and stay comparable across runs). A real training loop gets each batch from a host-side
loader: generated or decoded on the CPU, pinned (CUDA), copied to the device. This pass runs the same
training step fed that way, *after* the plain steps, and times the two halves of every step apart:
data wait (next batch + host-to-device copy, synchronised) and compute (the step, synchronised).

Every workload supports it: its ``make_batch`` on the CPU device is the host-side producer. The loader is
a ``torch.utils.data.DataLoader`` over that producer with no worker processes: the wait measured is the
cost of producing a batch in the training process, an upper bound for a loader that prefetches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from workloads.base import Batch, Workload

LOADER_DESCRIPTION = (
    "torch DataLoader (no worker processes) over the workload's make_batch on the CPU, "
    "pinned memory on CUDA, non-blocking copy to the device each step"
)


@dataclass(frozen=True)
class LoaderSplit:
    loader: str
    steps: int
    samples_per_step: int
    data_wait_s: tuple[float, ...]  # per step: next batch + copy to the device, synchronised
    compute_s: tuple[float, ...]  # per step: the training step, synchronised
    data_wait_mean_s: float
    compute_mean_s: float
    data_fraction: float  # of the loader-fed step time (wait + compute) spent waiting for data
    samples_per_s: float  # throughput when fed by this loader; the plain figure never includes it

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoaderSplit:
        d = dict(data)
        d["data_wait_s"] = tuple(d["data_wait_s"])
        d["compute_s"] = tuple(d["compute_s"])
        return cls(**d)


def split_from_times(
    data_wait_s: list[float], compute_s: list[float], samples_per_step: int, loader: str = LOADER_DESCRIPTION
) -> LoaderSplit:
    wait, comp = sum(data_wait_s), sum(compute_s)
    n = len(compute_s)
    return LoaderSplit(
        loader=loader,
        steps=n,
        samples_per_step=samples_per_step,
        data_wait_s=tuple(data_wait_s),
        compute_s=tuple(compute_s),
        data_wait_mean_s=wait / n,
        compute_mean_s=comp / n,
        data_fraction=wait / (wait + comp) if wait + comp > 0 else 0.0,
        samples_per_s=samples_per_step * n / (wait + comp) if wait + comp > 0 else 0.0,
    )


def host_batches(
    workload: Workload,
    size: str,
    batch_size: int,
    device: torch.device,
    cast: Callable[[Batch], Batch],
    seed: int,
    pin_memory: bool,
) -> Iterator[Batch]:
    """Endless batches made on the host and moved to ``device``: one ``next`` is one step's data wait."""
    # deferred: hpubench.store.record imports this module (LoaderSplit) on the torch-free CLI path
    import torch
    from torch.utils.data import DataLoader, IterableDataset  # deferred: as above

    class _Synthetic(IterableDataset):  # type: ignore[type-arg]
        def __iter__(self) -> Iterator[Batch]:
            gen = torch.Generator()
            gen.manual_seed(seed)
            while True:
                yield workload.make_batch(size, batch_size, torch.device("cpu"), gen)

    loader = DataLoader(_Synthetic(), batch_size=None, num_workers=0, pin_memory=pin_memory)
    for batch in loader:
        yield cast(tuple(t.to(device, non_blocking=True) for t in batch))


def run_loader_pass(
    step: Callable[[Batch], torch.Tensor],
    batches: Iterator[Batch],
    synchronize: Callable[[], None],
    steps: int,
    samples_per_step: int,
) -> LoaderSplit:
    """``steps`` timed loader-fed steps after one untimed one (the loader's own start-up)."""
    step(next(batches))
    synchronize()
    waits: list[float] = []
    computes: list[float] = []
    for _ in range(steps):
        t0 = time.perf_counter()
        batch = next(batches)
        synchronize()
        t1 = time.perf_counter()
        step(batch)
        synchronize()
        t2 = time.perf_counter()
        waits.append(t1 - t0)
        computes.append(t2 - t1)
    return split_from_times(waits, computes, samples_per_step)
