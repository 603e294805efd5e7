"""C1: torch refuses ``torch.Generator`` on the HPU device ("Device type HPU is not supported for
torch.Generator() api"); synthetic data must be drawn with a CPU generator and moved to the device."""

from __future__ import annotations

import re

import pytest
import torch
from contract_doubles import double_env, run_worker

import workloads
from hpubench.accelerators.cpu import CPUAccelerator
from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.run.batches import synthetic_batches

REFUSAL = re.escape("Device type HPU is not supported for torch.Generator() api")


@pytest.mark.parametrize("device", ["hpu", "hpu:0", torch.device("hpu")])
def test_the_double_refuses_a_generator_on_hpu(bridge, device) -> None:
    bridge()
    with pytest.raises(RuntimeError, match=REFUSAL):
        torch.Generator(device=device)


def test_the_double_refuses_a_generator_on_the_accelerators_hpu_device(bridge) -> None:
    """The accelerator hands out the real HPU device, which the double owns; a Generator there is refused."""
    bridge()
    device = HPUAccelerator(0).torch_device()
    assert device == torch.device("hpu", 0)
    assert torch.zeros(2, device=device).device == device
    with pytest.raises(RuntimeError, match=REFUSAL):
        torch.Generator(device=device)
    cpu = torch.Generator(device="cpu")  # the host generator stays usable, and is still a Generator
    assert isinstance(cpu, torch.Generator) and isinstance(torch.default_generator, torch.Generator)


def test_an_hpu_cell_runs_on_the_double() -> None:
    """Old worker: torch.Generator(device=<the HPU device>) failed every HPU cell on a Gaudi."""
    cell = {"workload": "mlp", "accelerator": "hpu", "mode": "eager", "warmup_steps": 1, "steps": 2}
    rec = run_worker(cell, double_env(PT_HPU_LAZY_MODE="0"))
    assert rec["status"] == "ok", (rec["reason"], rec.get("traceback_tail"))


@pytest.mark.parametrize("workload", ["mlp", "gpt"])
def test_cpu_batches_are_bit_identical_to_drawing_on_the_device(workload: str) -> None:
    wl = workloads.get(workload)
    device = CPUAccelerator(0).torch_device()
    old = torch.Generator(device=device)
    old.manual_seed(1234 + 1)
    expected = [wl.make_batch("tiny", 4, device, old) for _ in range(3)]
    got = synthetic_batches(wl, "tiny", 4, device, CPUAccelerator(0).generator_device(), 1234 + 1, 3)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        for x, y in zip(a, b, strict=True):
            assert x.device == y.device and x.dtype == y.dtype and torch.equal(x, y)


def test_hpu_batches_are_drawn_on_the_host_and_moved(bridge) -> None:
    bridge()
    acc = HPUAccelerator(0)
    assert acc.generator_device() == torch.device("cpu")
    wl = workloads.get("mlp")
    got = synthetic_batches(wl, "tiny", 4, acc.torch_device(), acc.generator_device(), 7, 2)
    host = synthetic_batches(wl, "tiny", 4, torch.device("cpu"), torch.device("cpu"), 7, 2)
    for a, b in zip(got, host, strict=True):
        for x, y in zip(a, b, strict=True):
            assert x.device == torch.device("hpu", 0)
            assert torch.equal(x.cpu(), y)  # the same data on every device
