"""C8: ``memory_stats()["Limit"]`` is the allocator's usable pool, below the HBM (Gaudi 29.85 GiB of 32,
Gaudi2 94.62 of 96, Gaudi3 126.06 of 128, as optimum-habana logs it); allocating beyond it raises the
bridge's ``RuntimeError("[Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::N (M)MB")``
(``device_memory.cpp``), which holds no "out of memory". hpubench plans against the usable pool and
records such a failure as out of device memory, naming the size."""

from __future__ import annotations

import re

import pytest
import torch
from contract_doubles import double_env, run_worker

from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.accelerators.hpu.rules import card_memory

GIB = 1024**3
DEVMEM = re.compile(
    r"^\[Rank:0\] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::(\d+) \(([\d.e+]+)\)MB$"
)


@pytest.mark.parametrize(("name", "gib"), [("GAUDI", 29.85), ("GAUDI2", 94.62), ("GAUDI3", 126.06)])
def test_limit_is_the_usable_pool_and_hpubench_plans_against_it(bridge, name: str, gib: float) -> None:
    bridge(HPUBENCH_FAKE_HPU_NAME=name)
    from habana_frameworks.torch import hpu

    limit = hpu.memory_stats()["Limit"]
    assert limit == int(gib * GIB) and round(limit / GIB, 2) == gib
    free, total = hpu.mem_get_info()
    assert total == limit and 0 < free < total
    assert card_memory("hpu", name) == (limit, False)  # never the HBM size


def test_beyond_the_limit_raises_the_devmem_error(bridge) -> None:
    bridge()
    from habana_frameworks.torch import hpu

    in_use = hpu.memory_stats()["InUse"]
    bridge(HPUBENCH_FAKE_HPU_HBM_BYTES=str(in_use + 256 * 1024**2))
    from habana_frameworks.torch import hpu as small

    small.synchronize()  # fits
    big = torch.ones(512 * 1024**2 // 4)  # 512 MiB, touched
    with pytest.raises(RuntimeError) as info:
        small.synchronize()
    del big
    found = DEVMEM.match(str(info.value))
    assert found and int(found.group(1)) >= 256 * 1024**2, str(info.value)
    assert "out of memory" not in str(info.value)
    assert HPUAccelerator.failure_reason(info.value).startswith("out of device memory: the card refused")


def test_a_cell_that_does_not_fit_fails_as_out_of_device_memory_naming_the_size() -> None:
    cell = {"workload": "mlp", "accelerator": "hpu", "mode": "lazy", "warmup_steps": 1, "steps": 2}
    rec = run_worker(cell, double_env(PT_HPU_LAZY_MODE="1", HPUBENCH_FAKE_HPU_HBM_BYTES=str(64 * 1024**2)))
    assert rec["status"] == "failed", rec["reason"]
    assert re.match(r"out of device memory: the card refused an allocation of \d+ bytes", rec["reason"])
    assert "MODULE:PT_DEVMEM Allocation failed for size::" in rec["reason"]
