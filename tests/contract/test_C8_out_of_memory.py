"""C8: allocations beyond the card's HBM (Gaudi 32 GiB, Gaudi2 96 GiB, Gaudi3 128 GiB) raise the bridge's
out-of-memory RuntimeError; ``memory_stats()["Limit"]`` is the usable size."""

from __future__ import annotations

import pytest
import torch
from contract_doubles import double_env, run_worker

GIB = 1024**3


@pytest.mark.parametrize(("name", "gib"), [("GAUDI", 32), ("GAUDI2", 96), ("GAUDI2C", 96), ("GAUDI3", 128)])
def test_limit_is_the_generation_hbm(bridge, name: str, gib: int) -> None:
    bridge(HPUBENCH_FAKE_HPU_NAME=name)
    from habana_frameworks.torch import hpu

    assert hpu.memory_stats()["Limit"] == gib * GIB
    free, total = hpu.mem_get_info()
    assert total == gib * GIB and 0 < free < total


def test_beyond_the_limit_raises_out_of_memory(bridge) -> None:
    bridge()
    from habana_frameworks.torch import hpu

    in_use = hpu.memory_stats()["InUse"]
    bridge(HPUBENCH_FAKE_HPU_HBM_BYTES=str(in_use + 256 * 1024**2))
    from habana_frameworks.torch import hpu as small

    small.synchronize()  # fits
    big = torch.ones(512 * 1024**2 // 4)  # 512 MiB, touched
    with pytest.raises(RuntimeError, match="out of memory"):
        small.synchronize()
    del big


def test_a_cell_that_does_not_fit_fails_with_the_reason() -> None:
    cell = {"workload": "mlp", "accelerator": "hpu", "mode": "lazy", "warmup_steps": 1, "steps": 2}
    rec = run_worker(cell, double_env(PT_HPU_LAZY_MODE="1", HPUBENCH_FAKE_HPU_HBM_BYTES=str(64 * 1024**2)))
    assert rec["status"] == "failed" and "out of memory" in rec["reason"], rec["reason"]
