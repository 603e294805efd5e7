"""Prices per device-hour, and the price/performance figures derived from a cell's measured throughput.

A price/performance number is only as good as the price behind it, and prices move (AWS cut its GPU
prices in June 2025; a negotiated contract beats any list price). So every default here comes from the
project's hardware fact sheet (``shared/hardware.md``) with the source and date it cites, figures the
sheet marks "U" are flagged as estimates, and a user's TOML file (``--prices``) can replace or extend
both this table and the peak table of :mod:`hpubench.analysis.peaks`.

A device is matched to a price with the very rule that matches it to a peak
(:func:`hpubench.analysis.peaks.entry_for`), so the two tables can never disagree about what a device is. An
unmatched device gets no price: "no price" is honest, a borrowed one is not.

The ``--prices`` file::

    [[price]]                      # one table per device kind; repeat for more
    name = "Gaudi2 (HL-225H)"      # a default's name replaces that entry's fields; a new name adds an entry
    accelerator = "hpu"            # new entries: hpu, cuda or cpu
    match = "^GAUDI2"              # new entries: regex searched (case-insensitively) in the device name
    usd_per_device_hour = 1.10     # required for new entries; > 0
    source = "our contract"        # where the figure comes from (shown in the report)
    as_of = "2025-06-01"
    estimate = false               # true marks the figure as an estimate in the report

    [[peak]]                       # same idea for the peak table; TFLOP/s per device, dense
    name = "H100 SXM"
    bf16 = 989
    source = "NVIDIA Hopper whitepaper"

Pure apart from reading the TOML file: no torch, nothing else on disk.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpubench.analysis.peaks import (
    DTYPES,
    PEAKS,
    PeakEntry,
    PeakFigure,
    device_matches,
    entry_for,
    mfu,
    peak_for,
)
from hpubench.analysis.stats import Estimate
from hpubench.core import accelerators
from hpubench.errors import UsageError
from hpubench.store.record import CellResult

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_ORIGIN = "hpubench/analysis/pricing.py"  # the defaults below, as the report names their origin


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

    def peak_for(self, accelerator: str, device_name: str, precision: str, tf32: bool) -> PeakFigure | None:
        return peak_for(accelerator, device_name, precision, tf32=tf32, table=self.peaks)

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


# ---- the user's TOML file -------------------------------------------------------------------------------

_PRICE_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "accelerator": str,
    "match": str,
    "usd_per_device_hour": (int, float),
    "source": str,
    "as_of": str,
    "offer": str,
    "devices_per_instance": int,
    "usd_per_instance_hour": (int, float),
    "estimate": bool,
    "per": str,
    "notes": str,
}
_PEAK_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "accelerator": str,
    "match": str,
    "memory_gb": (int, float),
    "memory_bw_tb_s": (int, float),
    "tdp_w": (int, float),
    **{d: (int, float) for d in DTYPES if d != "fp16"},
    "source": str,
    "as_of": str,
    "estimates": list,
    "per": str,
    "notes": str,
}


class _Bad(Exception):
    """A problem in one table of the file; the loader adds the file and the table's position."""


def _check_types(table: Mapping[str, Any], known: Mapping[str, type | tuple[type, ...]]) -> None:
    for key, value in table.items():
        if key not in known:
            raise _Bad(f"unknown key {key!r}; known keys: {', '.join(known)}")
        want = known[key]
        # TOML booleans are Python bools, which are ints too: a price of `true` must not pass as 1.
        if isinstance(value, bool) and want is not bool:
            raise _Bad(f"{key} = {value!r}: expected {_type_name(want)}")
        if not isinstance(value, want):
            raise _Bad(f"{key} = {value!r}: expected {_type_name(want)}")


def _type_name(want: type | tuple[type, ...]) -> str:
    if want == (int, float):
        return "a number"
    return {str: "a string", bool: "true or false", int: "an integer", list: "an array"}[want]  # type: ignore[index]


_PRICE_FIGURES = ("usd_per_device_hour", "usd_per_instance_hour", "devices_per_instance")
_PEAK_FIGURES = ("memory_gb", "memory_bw_tb_s", "tdp_w", "bf16", "fp32", "tf32", "fp8")


def _common(
    table: Mapping[str, Any], base: PriceEntry | PeakEntry | None, figures: tuple[str, ...], origin: str
) -> dict[str, Any]:
    """Fields shared by both tables; ``match`` and ``accelerator`` are required for a new entry.

    Where the user gives a figure, its source and date are the user's too (the file's path and no date
    unless they say): a default's citation must never vouch for a number it did not publish.
    """
    out: dict[str, Any] = {}
    if base is None:
        for key in ("accelerator", "match"):
            if key not in table:
                raise _Bad(f"new entry {table['name']!r} needs {key!r} (or use the name of a default entry)")
    if "accelerator" in table:
        known = accelerators.names()  # the registry: a third party's accelerator can be priced too
        if table["accelerator"] not in known:
            raise _Bad(f"accelerator = {table['accelerator']!r}: expected one of {', '.join(known)}")
        out["accelerator"] = table["accelerator"]
    if "match" in table:
        try:
            re.compile(table["match"])
        except re.error as e:
            raise _Bad(f"match = {table['match']!r} is not a valid regular expression ({e})") from None
        out["pattern"] = table["match"]
    if base is None or any(k in table for k in figures):
        out["source"] = f"user file {origin}"
        out["as_of"] = None
    for key in ("source", "as_of", "per", "notes"):
        if key in table:
            out[key] = table[key]
    return out


def _positive(table: Mapping[str, Any], key: str) -> float:
    value = table[key]
    if not math.isfinite(value) or value <= 0:
        raise _Bad(f"{key} = {value!r}: must be a positive number")
    return float(value)


def _price_entry(table: Mapping[str, Any], base: PriceEntry | None, origin: str) -> PriceEntry:
    _check_types(table, _PRICE_KEYS)
    fields = _common(table, base, _PRICE_FIGURES, origin)
    for key in ("usd_per_device_hour", "usd_per_instance_hour"):
        if key in table:
            fields[key] = _positive(table, key)
    if base is None and "usd_per_device_hour" not in table:
        raise _Bad(f"new entry {table['name']!r} needs 'usd_per_device_hour'")
    if "devices_per_instance" in table:
        if table["devices_per_instance"] < 1:
            raise _Bad(f"devices_per_instance = {table['devices_per_instance']}: must be at least 1")
        fields["devices_per_instance"] = table["devices_per_instance"]
    for key in ("offer", "estimate"):
        if key in table:
            fields[key] = table[key]
    if base is not None:
        return dataclasses.replace(base, origin=origin, **fields)
    return PriceEntry(name=table["name"], origin=origin, **fields)


def _peak_entry(table: Mapping[str, Any], base: PeakEntry | None, origin: str) -> PeakEntry:
    _check_types(table, _PEAK_KEYS)
    fields = _common(table, base, _PEAK_FIGURES, origin)
    for key in _PEAK_FIGURES:
        if key in table:
            fields[key] = _positive(table, key)
    if "estimates" in table:
        bad = [x for x in table["estimates"] if x not in _PEAK_FIGURES[3:]]
        if bad:
            raise _Bad(f"estimates = {table['estimates']!r}: entries must be among bf16, fp32, tf32, fp8")
        fields["estimates"] = frozenset(table["estimates"])
    elif base is not None:
        # A figure the user replaced is theirs now: it no longer carries the default's estimate flag.
        fields["estimates"] = base.estimates - set(fields)
    if base is not None:
        return dataclasses.replace(base, **fields)
    figures = {k: fields.pop(k, None) for k in _PEAK_FIGURES}
    return PeakEntry(name=table["name"], **figures, **fields)


def _merge(defaults: Sequence[Any], edits: list[tuple[str, Any]]) -> tuple[Any, ...]:
    """Edited defaults keep their place; new entries go first, so a user's own rule wins a tie."""
    by_name = dict(edits)
    new = [e for name, e in edits if name not in {d.name for d in defaults}]
    return (*new, *(by_name.get(d.name, d) for d in defaults))


def load_tables(path: str | Path, base: Tables | None = None) -> Tables:
    """Read a ``--prices`` TOML file (format: see the module docstring) over ``base`` (the defaults).

    Any problem is one UsageError naming the file, the table and the key, so a typo never silently
    leaves a default price in force.
    """
    base = base or Tables()
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{p}: no such price file; give the path to a .toml file") from None
    except OSError as e:
        raise UsageError(f"{p}: cannot read the price file ({e.strerror}); check the path") from None
    except UnicodeDecodeError:
        raise UsageError(f"{p}: not UTF-8 text; save the price file as UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{p}: invalid TOML: {' '.join(str(e).split())}; fix the syntax there") from None

    where = "top level"
    try:
        unknown = set(data) - {"price", "peak"}
        if unknown:
            raise _Bad(f"unknown key(s) {', '.join(sorted(unknown))}; write [[price]] and [[peak]] tables")
        price_edits: list[tuple[str, PriceEntry]] = []
        peak_edits: list[tuple[str, PeakEntry]] = []
        for kind, defaults, edits in (("price", base.prices, price_edits), ("peak", base.peaks, peak_edits)):
            tables = data.get(kind, [])
            if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
                raise _Bad(f"{kind} must be an array of tables: write each one as [[{kind}]]")
            for i, table in enumerate(tables, 1):
                where = f"[[{kind}]] #{i}"
                name = table.get("name")
                if not isinstance(name, str) or not name.strip():
                    raise _Bad("every entry needs a non-empty name")
                if name in {n for n, _ in edits}:
                    raise _Bad(f"name {name!r} appears twice in the file")
                default = next((d for d in defaults if d.name == name), None)
                if kind == "price":
                    edits.append((name, _price_entry(table, default, str(p))))
                else:
                    edits.append((name, _peak_entry(table, default, str(p))))
    except _Bad as e:
        raise UsageError(f"{p}: {where}: {e}") from None
    return Tables(prices=_merge(base.prices, price_edits), peaks=_merge(base.peaks, peak_edits))


# ---- price/performance of one cell ----------------------------------------------------------------------


@dataclass(frozen=True)
class CellEconomics:
    """Throughput turned into what a buyer compares: per device, per dollar, per workload of N samples.

    Every dollar figure is None where the device has no price; MFU is None where it has no peak for the
    precision used. Intervals are the throughput interval carried through (cost is inversely
    proportional to throughput, prices being fixed), so they stay bootstrap intervals over step times.
    """

    world_size: int
    samples_per_s: float
    samples_per_s_ci: tuple[float, float]
    samples_per_s_per_device: float
    tokens_per_s: float | None
    price: PriceEntry | None
    usd_per_hour: float | None  # all devices of the cell together
    usd_per_million_samples: float | None
    usd_per_million_samples_ci: tuple[float, float] | None
    usd_per_million_tokens: float | None
    samples_per_usd: float | None
    workload_samples: int | None
    workload_time_s: float | None
    workload_cost_usd: float | None
    peak: PeakFigure | None
    achieved_tflops: float | None
    mfu: float | None


def uses_tf32(result: CellResult) -> bool:
    """Whether a 32-true CUDA cell ran its matmuls in TF32 (then the TF32 peak bounds it, not FP32)."""
    flags = result.runtime.env_flags
    return isinstance(flags, dict) and str(flags.get("allow_tf32_matmul")) == "True"


def device_name(result: CellResult) -> str:
    name = result.runtime.device_name
    return name if isinstance(name, str) else ""


def economics(
    result: CellResult,
    tables: Tables,
    workload_samples: int | None = None,
    samples_per_s: Estimate | None = None,
) -> CellEconomics | None:
    """Price/performance of one measured cell; None for a cell with no measurement (skipped, failed).

    ``samples_per_s`` replaces the record's own throughput where a cell has several repetitions; tokens
    and achieved TFLOP/s scale with it, since both are fixed amounts of work per sample.
    """
    m = result.metrics
    if m is None:
        return None
    if workload_samples is not None and workload_samples < 1:
        raise ValueError(f"workload_samples must be at least 1, got {workload_samples}")
    world = result.cell.world_size
    acc, name = result.cell.accelerator, device_name(result)
    price = tables.price_for(acc, name)
    peak = tables.peak_for(acc, name, result.cell.precision, uses_tf32(result))
    if samples_per_s is None:
        sps, (lo, hi) = m.samples_per_s, m.samples_per_s_ci
    else:
        sps, lo, hi = samples_per_s.value, samples_per_s.lo, samples_per_s.hi
    scale = sps / m.samples_per_s
    tps = m.tokens_per_s * scale if m.tokens_per_s is not None else None
    achieved = m.achieved_tflops * scale if m.achieved_tflops is not None else None
    usd_h = price.usd_per_device_hour * world if price else None
    return CellEconomics(
        world_size=world,
        samples_per_s=sps,
        samples_per_s_ci=(lo, hi),
        samples_per_s_per_device=sps / world,
        tokens_per_s=tps,
        price=price,
        usd_per_hour=usd_h,
        usd_per_million_samples=_usd_per_million(usd_h, sps),
        # The fastest end of the throughput interval is the cheapest end of the cost interval.
        usd_per_million_samples_ci=(usd_h / (hi * 3600) * 1e6, usd_h / (lo * 3600) * 1e6) if usd_h else None,
        usd_per_million_tokens=_usd_per_million(usd_h, tps),
        samples_per_usd=sps * 3600 / usd_h if usd_h else None,
        workload_samples=workload_samples,
        workload_time_s=workload_samples / sps if workload_samples else None,
        workload_cost_usd=workload_samples / sps / 3600 * usd_h if workload_samples and usd_h else None,
        peak=peak,
        achieved_tflops=achieved,
        mfu=mfu(achieved, peak, world) if peak and achieved is not None else None,
    )


def _usd_per_million(usd_per_hour: float | None, units_per_s: float | None) -> float | None:
    if usd_per_hour is None or not units_per_s:
        return None
    return usd_per_hour / (units_per_s * 3600) * 1e6


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both cost (lower) and throughput (higher).

    These are the only configurations worth buying: anything off the front is both slower and dearer
    than something on it. Returned in order of increasing cost; exact duplicates are all kept.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front: list[int] = []
    best = -math.inf
    last: tuple[float, float] | None = None
    for i in order:
        thr = points[i][1]
        if thr > best or points[i] == last:
            front.append(i)
            best = max(best, thr)
            last = points[i]
    return front
