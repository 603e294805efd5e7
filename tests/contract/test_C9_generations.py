"""C9: ``get_device_name()`` returns GAUDI, GAUDI2 (and GAUDI2B/C/D), GAUDI3; fp16 and fp8 are refused on
first-generation Gaudi; fp8 goes through transformer_engine ``fp8_autocast`` on Gaudi2+."""

from __future__ import annotations

import pytest
import torch
from contract_doubles import double_env, run_worker

from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.accelerators.hpu.rules import gaudi_generation


@pytest.mark.parametrize(
    ("name", "gen"), [("GAUDI", 1), ("GAUDI2", 2), ("GAUDI2B", 2), ("GAUDI2D", 2), ("GAUDI3", 3)]
)
def test_device_names_per_generation(bridge, name: str, gen: int) -> None:
    bridge(HPUBENCH_FAKE_HPU_NAME=name)
    assert HPUAccelerator(0).device_name() == name
    assert gaudi_generation(name) == gen


def test_first_gen_refuses_fp16_at_the_first_half_tensor_and_fp8(bridge) -> None:
    """``tensor_utils.cpp``: "float16/half is not supported on Gaudi." when a half tensor is allocated on
    the card (entering the autocast alone is not refused)."""
    bridge(HPUBENCH_FAKE_HPU_NAME="GAUDI")
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te

    x = torch.ones(2, 2, device="hpu")
    with (
        torch.autocast(device_type="hpu", dtype=torch.float16),
        pytest.raises(RuntimeError, match=r"^float16/half is not supported on Gaudi\.$"),
    ):
        x @ x
    with pytest.raises(RuntimeError, match="float16/half is not supported on Gaudi"):
        torch.ones(2, dtype=torch.float16).to("hpu")
    with pytest.raises(RuntimeError), te.fp8_autocast(enabled=True):
        pass
    with torch.autocast(device_type="hpu", dtype=torch.bfloat16):  # bf16 is fine
        x @ x


def test_gaudi2_runs_fp16_and_fp8(bridge) -> None:
    bridge(HPUBENCH_FAKE_HPU_NAME="GAUDI2")
    import habana_frameworks.torch.hpex.experimental.transformer_engine as te

    with torch.autocast(device_type="hpu", dtype=torch.float16), te.fp8_autocast(enabled=True):
        pass


@pytest.mark.parametrize("precision", ["16-mixed", "fp8"])
def test_hpubench_skips_them_on_first_gen_rather_than_failing(precision: str) -> None:
    cell = {"workload": "mlp", "accelerator": "hpu", "mode": "eager", "precision": precision, "steps": 2}
    rec = run_worker(cell, double_env(PT_HPU_LAZY_MODE="0", HPUBENCH_FAKE_HPU_NAME="GAUDI"))
    assert rec["status"] == "skipped" and "first-generation" in rec["reason"], rec["reason"]
