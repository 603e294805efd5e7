"""The user's ``--prices`` TOML file: read it, check every table and key, merge it over the defaults.

Separate from :mod:`hpubench.analysis.prices` (the tables themselves): this is input validation, where every
problem becomes one UsageError naming the file, the table and the key.

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
from pathlib import Path
from typing import Any

from hpubench import accelerators
from hpubench.analysis.peaks import PeakEntry
from hpubench.analysis.prices import PriceEntry, Tables
from hpubench.errors import UsageError
from hpubench.precision.spec import DTYPES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

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
    except (tomllib.TOMLDecodeError, RecursionError) as e:  # RecursionError: nested past any price file
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
