"""`hpubench env` says what a cell gets (issue 15: two CPU cores were called "2 devices")."""

from __future__ import annotations

from rich.console import Console

from hpubench.plan.inventory import DeviceInfo, Inventory
from hpubench.present.envtable import env_table, found, memory, peaks

CPU = DeviceInfo("cpu", 2, "Intel(R) Xeon(R) Processor", 24 * 2**30, memory_shared=True)
GAUDI2 = DeviceInfo("hpu", 8, "GAUDI2", 96 * 2**30)


def test_cpu_cores_are_one_shared_device() -> None:
    assert found(CPU) == "2 cores, 1 device (a cell's ranks share it, up to 2)"
    assert memory(CPU) == "24.0 GiB (host, shared)"
    assert found(GAUDI2) == "8 devices" and memory(GAUDI2) == "96.0 GiB per device"
    assert found(DeviceInfo("cuda", 0, "")) == "none"


def test_peak_for_mfu_comes_with_its_source_or_says_why_none() -> None:
    peak, source = peaks(GAUDI2)
    assert "432 TFLOP/s bf16" in peak and "Hot Chips" in source
    assert peaks(CPU) == ("-", "not in the peak table: MFU is not computed (a --prices file can add it)")


def test_table_has_a_row_per_accelerator() -> None:
    console = Console(width=200, record=True)
    console.print(env_table(Inventory((GAUDI2, CPU)), "env"))
    text = console.export_text()
    assert "2 cores, 1 device" in text and "8 devices" in text and "2 devices" not in text
