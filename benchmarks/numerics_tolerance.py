"""Where the numerics tolerances come from: how far a correct configuration's loss trajectory strays from
the 32-true eager reference (``hpubench.analysis.numerics``).

Run with ``python benchmarks/numerics_tolerance.py [--seeds 3] [--workloads mlp,gpt,resnet,hf:gpt2] [--size
tiny] [--only LABEL] [--json PATH]``. For each reference workload at size tiny (``--size``) and each seed, the
reference trajectory (32-true, eager, one thread) is trained for ``STEPS_COMPARED`` steps from seeded weights
on seeded batches, exactly as a cell's reference is (``hpubench.run.cellrun.reference.trajectory``), then each
variant from the same weights on the same batches, and the deviation metric (``numerics.deviation``) between
them is printed:

- ``32-true eager, 2 threads``: the rounding noise of fp32 itself (another reduction order), the floor;
- ``32-true compile``: torch.compile's reordering and fusion at fp32;
- ``bf16-mixed``, ``16-mixed``, ``bf16-true`` eager: each precision against fp32;
- ``bf16-mixed compile``: both at once, to check that the tolerances add up.

Loss values are not timings, so a busy machine does not change them. CPU only. The tolerances in
``numerics.TOLERANCES`` are set with a margin above the largest figure printed here; the figures are in
docs/measurements.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

import workloads
from hpubench import accelerators
from hpubench.analysis import numerics
from hpubench.run.batches import synthetic_batches
from hpubench.run.cellrun.reference import trajectory
from hpubench.run.cellrun.resolve import N_BATCHES, SEED

# (label, precision, compiled, threads)
VARIANTS: tuple[tuple[str, str, bool, int], ...] = (
    ("32-true eager, 2 threads", "32-true", False, 2),
    ("32-true compile", "32-true", True, 1),
    ("bf16-mixed eager", "bf16-mixed", False, 1),
    ("16-mixed eager", "16-mixed", False, 1),
    ("bf16-true eager", "bf16-true", False, 1),
    ("bf16-mixed compile", "bf16-mixed", True, 1),
)


def measure(
    names: list[str], seeds: int, size: str = "tiny", only: str = ""
) -> dict[str, dict[str, list[float]]]:
    """Deviation per variant (those whose label contains ``only``), per workload, one figure per seed."""
    acc = accelerators.get("cpu")(0)
    device = acc.torch_device()
    out: dict[str, dict[str, list[float]]] = {}
    for name in names:
        workload = workloads.get(name)
        if workload.unavailable:
            print(f"{name}: skipped ({workload.unavailable})")
            continue
        batch = workload.sizes[size].batch_size
        for k in range(seeds):
            seed = SEED + 1000 * k
            generator = acc.generator_device()
            batches = synthetic_batches(workload, size, batch, device, generator, seed, N_BATCHES)
            torch.set_num_threads(1)
            ref = trajectory(workload, size, acc, device, batches, seed=seed)
            for label, precision, compiled, threads in VARIANTS:
                if only not in label:
                    continue
                torch.set_num_threads(threads)
                t0 = time.perf_counter()
                losses = trajectory(workload, size, acc, device, batches, precision, compiled, seed=seed)
                dev, at = numerics.deviation(losses, ref)
                out.setdefault(label, {}).setdefault(name, []).append(dev)
                print(
                    f"{name:9} seed {seed:5}  {label:26} deviation {dev:.3g} at step {at}"
                    f"  ({time.perf_counter() - t0:.1f} s)",
                    flush=True,
                )
            torch.set_num_threads(1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workloads", default="mlp,gpt,resnet,hf:gpt2")
    parser.add_argument("--size", default="tiny")
    parser.add_argument("--only", default="", help="run only the variants whose label contains this")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    figures = measure(names, args.seeds, args.size, args.only)
    print(f"\nlargest deviation over {args.seeds} seeds, first {numerics.STEPS_COMPARED} steps:")
    print(f"{'variant':26} {'max':>9}  per workload")
    for label, per in figures.items():
        largest = max(max(v) for v in per.values())
        each = ", ".join(f"{n} {max(v):.3g}" for n, v in per.items())
        print(f"{label:26} {largest:9.3g}  {each}")
    if args.json is not None:
        args.json.write_text(json.dumps({"steps": numerics.STEPS_COMPARED, "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
