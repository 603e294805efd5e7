"""``hpubench env``'s table: what each accelerator offers a cell, in words that are true for it.

Pure (no detection, no I/O): the CLI hands it the inventory. Two CPU cores are not "2 devices": they are
one device whose cores a multi-rank CPU cell divides (``DeviceInfo.memory_shared``), and the table says
so. Beside each device: its memory and the peak FLOP/s hpubench divides by for MFU, with the peak's
source, or why there is none (then MFU is left empty, never guessed).
"""

from __future__ import annotations

from rich.table import Table

from hpubench import numfmt
from hpubench.analysis.peaks import PeakFigure, peak_for
from hpubench.plan.inventory import DeviceInfo, Inventory

PEAK_PRECISIONS = ("bf16-mixed", "32-true")  # the precisions whose peaks the table shows


def found(d: DeviceInfo) -> str:
    """How many of it there are, in the unit a cell spends."""
    if d.count == 0:
        return "none"
    if d.memory_shared:
        return f"{d.count} cores, 1 device (a cell's ranks share it, up to {d.count})"
    return f"{d.count} device{'s' if d.count != 1 else ''}"


def memory(d: DeviceInfo) -> str:
    if d.count == 0 or d.memory_bytes is None:
        return "-"
    return numfmt.size(d.memory_bytes) + (" (host, shared)" if d.memory_shared else " per device")


def _peak(p: PeakFigure | None) -> str:
    if p is None:
        return "-"
    return f"{numfmt.sig(p.tflops)} TFLOP/s {p.dtype}" + (" (estimate)" if p.estimate else "")


def peaks(d: DeviceInfo) -> tuple[str, str]:
    """The peaks for MFU and their source; an unknown device has none, and says so."""
    if d.count == 0 or not d.device_name:
        return "-", "-"
    figures = [peak_for(d.accelerator, d.device_name, prec) for prec in PEAK_PRECISIONS]
    known = [p for p in figures if p is not None]
    if not known:
        return "-", "not in the peak table: MFU is not computed (a --prices file can add it)"
    return ", ".join(_peak(p) for p in known), f"{known[0].device}: {known[0].source}"


def env_table(inventory: Inventory, title: str) -> Table:
    table = Table(title=title)
    for col in ("accelerator", "found", "device name", "memory", "peak for MFU", "peak source"):
        table.add_column(col, overflow="fold")
    for d in inventory.devices:
        peak, source = peaks(d)
        table.add_row(d.accelerator, found(d), d.device_name or "-", memory(d), peak, source)
    return table
