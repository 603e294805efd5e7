"""A synthetic result set at the scale users run (issue 35): four machines, 250 cells each, 1,000 in all,
schema-valid records written as runs write them, with realistic spreads and some skipped and failed cells.

The machines are real device names the price and peak tables know (the host CPU, Gaudi, Gaudi2 and an
H100), so the report prices and ranks them; the two Gaudi sets are marked as the test double's, as every
Gaudi record made on this project's machines is. Deterministic: the same files for the same arguments.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from tests.reportdata import DOUBLE, fake_result, write_run

# (label, accelerator, device name, speed relative to the CPU, software versions)
MACHINES = (
    ("cpu-host", "cpu", "Intel(R) Xeon(R) Platinum 8480+", 1.0, None),
    ("gaudi", "hpu", "GAUDI", 9.0, DOUBLE),
    ("gaudi2", "hpu", "GAUDI2", 24.0, DOUBLE),
    ("h100", "cuda", "NVIDIA H100 80GB HBM3", 30.0, None),
)
WORKLOADS = {"mlp": 0.002, "resnet": 0.09, "gpt": 0.05, "bert": 0.06, "llama": 0.2}  # CPU step seconds
PRECISIONS = {"32-true": 1.0, "bf16-mixed": 0.6, "16-mixed": 0.62, "bf16-true": 0.5, "fp8": 0.4}
MODES = {"eager": 1.0, "lazy": 0.8, "compile": 0.7}
DEVICES = (1, 8)
PER_MACHINE = 250


def machine_results(label: str, accelerator: str, device: str, speed: float, software: dict | None) -> list:
    """250 records of one machine: every workload x precision x mode x graphs x devices, cut to 250."""
    rng = np.random.default_rng(sum(map(ord, label)))
    combos = itertools.product(WORKLOADS, PRECISIONS, MODES, (False, True), DEVICES)
    out = []
    for i, (workload, precision, mode, graphs, devices) in enumerate(itertools.islice(combos, PER_MACHINE)):
        skip = None
        if accelerator == "cpu" and (mode == "lazy" or graphs or precision == "fp8" or devices > 1):
            skip = "lazy mode, graph capture, fp8 and 8 devices need an accelerator this host lacks"
        elif accelerator == "hpu" and precision == "16-mixed" and device == "GAUDI":
            skip = "first-generation Gaudi has no fp16"
        elif accelerator == "cuda" and mode == "lazy":
            skip = "lazy mode is HPU-only"
        common = dict(precision=precision, mode=mode, graphs=graphs, devices=devices, software=software)
        if skip:
            out.append(fake_result(workload, accelerator, device, status="skipped", reason=skip, **common))
            continue
        if rng.random() < 0.02:
            reason = "RuntimeError: out of memory while allocating the optimizer state"
            out.append(fake_result(workload, accelerator, device, status="failed", reason=reason, **common))
            continue
        step = WORKLOADS[workload] * PRECISIONS[precision] * MODES[mode] * (0.85 if graphs else 1.0) / speed
        out.append(
            fake_result(
                workload,
                accelerator,
                device,
                step_s=step * (1 + 0.08 * (devices > 1)),
                noise=float(rng.uniform(0.01, 0.06)),
                seed=i,
                peak_bytes=int((2 + 6 * rng.random()) * 2**30),
                **common,
            )
        )
    return out


def write_scale_runs(root: Path) -> list[Path]:
    """The four machines' run directories under ``root`` (1,000 records)."""
    return [
        write_run(root / label, machine_results(label, acc, dev, speed, sw), hostname=f"{label}-node")
        for label, acc, dev, speed, sw in MACHINES
    ]
