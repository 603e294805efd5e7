"""The README's "Your own model" snippet, run as written through ``--workloads-from``; and ``wrap``'s
answers when a model's output is no loss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import workloads
from tests.e2e.conftest import run_cli
from workloads.flops import count_flops

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _snippet() -> str:
    section = README.read_text().split("### Your own model", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.fixture(autouse=True)
def _registry_restored():
    saved = dict(workloads.registry._REGISTRY)
    yield
    workloads.registry._REGISTRY.clear()
    workloads.registry._REGISTRY.update(saved)


def test_the_readme_snippet_is_short_and_runs_through_the_cli(tmp_path: Path) -> None:
    code = _snippet()
    assert len(code.strip().splitlines()) < 30
    plugin = tmp_path / "my_model.py"
    plugin.write_text(code)
    out = tmp_path / "run"
    proc = run_cli("run", "--workloads-from", str(plugin), "-w", "my-model", "-a", "cpu", "--steps", "3",
                   "--out", str(out), cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (record,) = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines() if line.strip()]
    assert record["status"] == "ok", (record["reason"], record["traceback_tail"])
    m = record["metrics"]
    assert m["samples_per_s"] > 0 and m["samples_per_step"] == 8
    # Two linear layers (32 -> 64 -> 10) at batch 8: forward + both gradients, but no gradient for the data.
    assert m["flops_per_step"] == 6 * 8 * (32 * 64 + 64 * 10) - 2 * 8 * 32 * 64
    assert 1.5 < m["loss_first"] < 3.5  # ~ln(10) at init


def test_wrap_accepts_tuples_and_an_explicit_loss_and_counts_flops_on_meta() -> None:
    def batch(size, batch_size, device, generator):
        return torch.randn(batch_size, 4, device=device, generator=generator), torch.zeros(
            batch_size, device=device
        )

    cls = workloads.wrap(
        "wrapped-tuple",
        lambda size: nn.Linear(4, 1),
        batch,
        loss=lambda model, b: (model(b[0]).squeeze(1) - b[1]).square().mean(),
        sizes={"tiny": 2},
        tokens_per_sample=4,
    )
    wl = workloads.get("wrapped-tuple")
    assert isinstance(wl, cls) and wl.tokens_per_sample("tiny") == 4
    assert count_flops(wl, "tiny", 2) == 2 * 2 * 4 * 1 * 2  # forward + weight gradient, no data gradient
    with pytest.raises(ValueError, match="unknown size 'standard'"):
        wl.build_model("standard")


def test_a_model_whose_output_is_no_loss_is_told_how_to_fix_it() -> None:
    workloads.wrap("wrapped-logits", lambda size: nn.Linear(4, 3), lambda s, n, d, g: torch.randn(n, 4))
    wl = workloads.get("wrapped-logits")
    model = wl.build_model("tiny")
    with pytest.raises(TypeError, match=r"not a scalar loss .*pass loss=lambda model, batch"):
        wl.loss(model, wl.make_batch("tiny", 2, torch.device("cpu"), None))
