"""Harness code that misplaces a tensor fails under the habana_frameworks double, as it would on a Gaudi.

Issue 12: the double's HPU tensors must not be host tensors handed out by patching hpubench; the double
owns the HPU device, so a step whose batch stays on the host while the model is on the HPU raises torch's
device-mismatch error. Each check runs in a fresh interpreter with only ``tests/fakes`` on the path, the
way hpubench's workers meet the double.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

FAKES = Path(__file__).resolve().parents[1] / "fakes"
ROOT = Path(__file__).resolve().parents[2]
FOREIGN = ("PT_HPU", "HPUBENCH_FAKE", "HABANA_", "HLS_")
MISMATCH = "Expected all tensors to be on the same device"

# One training step of the mlp workload through hpubench's own step, the model on the accelerator's
# device; argv[1] says whether the batch is moved there (the worker's way) or left on the host.
STEP = textwrap.dedent(
    """
    import sys
    import torch
    import workloads
    from hpubench.accelerators.hpu.accelerator import HPUAccelerator
    from hpubench.precision.apply import prepare
    from hpubench.run.trainstep import make_optimizer, step_factory

    acc = HPUAccelerator(0)
    acc.setup()
    device = acc.torch_device()
    wl = workloads.get("mlp")
    model = wl.build_model("tiny").to(device)
    prepared = prepare("32-true", model, acc)
    step = step_factory(wl, make_optimizer(wl, model, capturable=False), prepared, acc)(model)
    host = wl.make_batch("tiny", 4, torch.device("cpu"), torch.Generator(device="cpu").manual_seed(1))
    batch = tuple(t.to(device) for t in host) if sys.argv[1] == "moved" else host
    try:
        loss = step(batch)
    except RuntimeError as exc:
        print("REFUSED", str(exc).splitlines()[0])
    else:
        print("OK", next(model.parameters()).device, loss.device, float(loss.item()))
    """
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN)}
    env["PYTHONPATH"] = os.pathsep.join([str(FAKES), str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra)
    return env


def _step(placement: str, lazy_mode: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", STEP, placement],
        env=_env(PT_HPU_LAZY_MODE=lazy_mode),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("lazy_mode", ["0", "1"])
def test_a_batch_left_on_the_host_is_refused(lazy_mode: str) -> None:
    out = _step("host", lazy_mode)
    assert out.startswith("REFUSED") and MISMATCH in out and "hpu:0" in out, out


def test_a_batch_moved_to_the_device_trains_on_hpu() -> None:
    out = _step("moved", "0")
    kind, param_device, loss_device, loss = out.split()
    assert (kind, param_device, loss_device) == ("OK", "hpu:0", "hpu:0"), out
    assert float(loss) > 0


def test_compiled_code_making_tensors_on_the_device_runs_on_hpu() -> None:
    """torch.compile(backend="hpu_backend") traces the double's HPU tensors with fake tensors; a tensor
    the traced code makes on the device (positions, as gpt does) must meet the parameters there."""
    script = textwrap.dedent(
        """
        import torch
        import habana_frameworks.torch.core  # noqa: F401

        emb = torch.nn.Embedding(16, 4).to("hpu:0")

        def f(tokens):
            positions = torch.arange(tokens.shape[0], device=tokens.device)
            return (emb(tokens) + emb(positions)).sum()

        tokens = torch.tensor([1, 2, 3]).to("hpu:0")
        out = torch.compile(f, backend="hpu_backend")(tokens)
        out.backward()
        print(out.device, emb.weight.grad.device, torch.allclose(out.cpu(), f(tokens).cpu()))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=_env(PT_HPU_LAZY_MODE="0"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["hpu:0", "hpu:0", "True"]
