"""Prices per device-hour: the default price table, and the tables (prices and peaks) in force for a report.

A price/performance number is only as good as the price behind it, and prices move (AWS cut its GPU
prices in June 2025; a negotiated contract beats any list price). So every default here comes from the
project's hardware fact sheet (``shared/hardware.md``) with the source and date it cites, figures the
sheet marks "U" are flagged as estimates, and a user's TOML file (``--prices``, read by
:mod:`hpubench.analysis.pricefile`) can replace or extend both this table and the peak table of
:mod:`hpubench.analysis.peaks`.

A device is matched to a price with the very rule that matches it to a peak
(:func:`hpubench.analysis.peaks.entry_for`), so the two tables can never disagree about what a device is. An
unmatched device gets no price: "no price" is honest, a borrowed one is not.

Pure: no torch, no I/O.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from hpubench.analysis.peaks import PEAKS, PeakEntry, PeakFigure, device_matches, entry_for, peak_for
from hpubench.errors import UsageError

DEFAULT_ORIGIN = "hpubench/analysis/prices.py"  # the defaults below, as the report names their origin


@dataclass(frozen=True)
class PriceEntry:
    """One row of the price table: what one device of a kind costs per hour, and where that came from."""

    name: str
    accelerator: str  # registry name: "hpu", "cuda", "cpu"
    pattern: str  # regex searched case-insensitively in the recorded device name (same rule as peaks)
    usd_per_device_hour: float
    source: str
    as_of: str | None
    offer: str = ""  # the instance the price is for, e.g. "AWS dl1.24xlarge"
    devices_per_instance: int | None = None
    usd_per_instance_hour: float | None = None
    estimate: bool = False
    per: str = "device"  # "socket" for the CPU row: one CPU cell is priced as one socket
    notes: str = ""
    origin: str = DEFAULT_ORIGIN  # where the entry came from: the fact sheet, a --prices file, --price-here

    def matches(self, accelerator: str, device_name: str) -> bool:
        return device_matches(self.accelerator, self.pattern, accelerator, device_name)


def _peak_pattern(name: str) -> str:
    """A price row for hardware the peak table knows uses that row's rule, so both match alike."""
    return next(e.pattern for e in PEAKS if e.name == name)


_TIBER = "Intel gaudi-reference-cloud docs"
_JUNE_2025_CUT = "before June 2025 cut"  # AWS cut its GPU instance prices in June 2025

# From shared/hardware.md, "On-demand prices". The per-device figure is the sheet's own column.
PRICES: tuple[PriceEntry, ...] = (
    PriceEntry(
        name="Gaudi (HL-205)",
        accelerator="hpu",
        pattern=_peak_pattern("Gaudi (HL-205)"),
        usd_per_device_hour=1.64,
        source="AWS on-demand (us-east-1)",
        as_of="2023-24",
        offer="AWS dl1.24xlarge",
        devices_per_instance=8,
        usd_per_instance_hour=13.11,
    ),
    PriceEntry(
        name="Gaudi2 (HL-225H)",
        accelerator="hpu",
        pattern=_peak_pattern("Gaudi2 (HL-225H)"),
        usd_per_device_hour=1.30,
        source=_TIBER,
        as_of="2025-02-28",
        offer="Intel Tiber Dev Cloud bare-metal Gaudi2",
        devices_per_instance=8,
        usd_per_instance_hour=10.40,
    ),
    PriceEntry(
        name="Gaudi3 (HL-325L)",
        accelerator="hpu",
        pattern=_peak_pattern("Gaudi3 (HL-325L)"),
        usd_per_device_hour=2.49,
        source=_TIBER,
        as_of="2025-02-28",
        offer="Intel Tiber Dev Cloud bare-metal Gaudi3",
        devices_per_instance=8,
        usd_per_instance_hour=19.92,
    ),
    PriceEntry(
        name="A100 SXM 40GB",
        accelerator="cuda",
        # p4d carries the 40GB part; the 80GB part (p4de) has no price in the fact sheet, so it gets none.
        pattern=r"^(?!.*\b(?:PCIE|NVL)\b)(?=.*\b40GB\b).*\bA100\b",
        usd_per_device_hour=4.10,
        source="AWS on-demand",
        as_of=f"2022 ({_JUNE_2025_CUT})",
        offer="AWS p4d.24xlarge",
        devices_per_instance=8,
        usd_per_instance_hour=32.77,
    ),
    PriceEntry(
        name="H100 SXM",
        accelerator="cuda",
        pattern=_peak_pattern("H100 SXM"),
        usd_per_device_hour=12.29,
        source="AWS on-demand",
        as_of=f"2023-07 ({_JUNE_2025_CUT})",
        offer="AWS p5.48xlarge",
        devices_per_instance=8,
        usd_per_instance_hour=98.32,
        # The sheet's post-cut figure is unconfirmed ("U"): neither used nor quoted beside this one.
        notes="list price before AWS's June 2025 cut; the post-cut price is unconfirmed, so not used: "
        "give yours with --price-here or --prices",
    ),
    PriceEntry(
        name="H200 SXM",
        accelerator="cuda",
        pattern=_peak_pattern("H200 SXM"),
        usd_per_device_hour=5.41,
        source="AWS capacity blocks page",
        as_of="2024",
        offer="AWS p5e.48xlarge, capacity block",
        devices_per_instance=8,
        usd_per_instance_hour=43.26,
        notes="capacity-block price (reserved in advance), not on-demand",
    ),
    PriceEntry(
        name="CPU, Xeon Sapphire Rapids socket",
        accelerator="cpu",
        # 4th-generation Xeon Scalable (Sapphire Rapids): model numbers x4xx, e.g. Platinum 8480+.
        pattern=r"\bXeon\b.*\b[345689]4\d\d(?!\d)",
        usd_per_device_hour=1.81,
        source=_TIBER,
        as_of="2025-02-28",
        offer="Intel Tiber Dev Cloud bare-metal SPR, 2 sockets",
        devices_per_instance=2,
        usd_per_instance_hour=3.62,
        per="socket",
        notes="priced per socket: a CPU cell counts as one socket",
    ),
)


@dataclass(frozen=True)
class Tables:
    """The peak and price tables in force for one report: the defaults, possibly with a user's edits."""

    prices: tuple[PriceEntry, ...] = PRICES
    peaks: tuple[PeakEntry, ...] = PEAKS

    def price_for(self, accelerator: str, device_name: str) -> PriceEntry | None:
        return entry_for(accelerator, device_name, self.prices)

    def peak_for(
        self, accelerator: str, device_name: str, precision: str, tf32_share: float = 0.0
    ) -> PeakFigure | None:
        return peak_for(accelerator, device_name, precision, tf32_share=tf32_share, table=self.peaks)

    def with_price_here(self, accelerator: str, device_name: str, usd_per_device_hour: float) -> Tables:
        """The user's price for the machine the results ran on, ahead of every other entry."""
        check_price(usd_per_device_hour, "--price-here")
        here = PriceEntry(
            name=f"this machine ({device_name or accelerator})",
            accelerator=accelerator,
            pattern=f"^{re.escape(device_name.strip())}$",
            usd_per_device_hour=float(usd_per_device_hour),
            source="given on the command line (--price-here)",
            as_of=None,
            origin="--price-here",
        )
        return dataclasses.replace(self, prices=(here, *self.prices))


def check_price(value: object, what: str) -> float:
    """A price must be a positive finite number: zero would make samples per dollar infinite."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise UsageError(f"{what} must be a positive number of dollars per device-hour, got {value!r}")
    return float(value)
