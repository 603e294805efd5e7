"""What ``hpubench report`` and ``hpubench compare`` do: load, price, build, and write atomically.

An output file is either the old one or a complete new one, never half of either: everything is built
in memory first (any bad input fails before the output is touched), then written to a temporary file
beside the target and moved over it with ``os.replace``, only where an output may go
(``hpubench.present.outfile``: a new path or a regular file outside any results directory).
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hpubench.analysis.compare import COMPARE_STATISTIC, Comparison, compare
from hpubench.analysis.pricefile import load_tables
from hpubench.analysis.prices import Tables, check_price
from hpubench.analysis.stats.locations import LOCATIONS
from hpubench.errors import UsageError
from hpubench.present import export
from hpubench.present.outfile import check_suffix, check_target, write_output
from hpubench.store.layout import same_results
from reports.build import compare_html, report_html
from reports.frames import cell_frame, measured
from reports.sources import ResultSet, load_result_set, load_result_sets

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("html", "csv", "parquet", "json")
MAX_EPOCH_SAMPLES = 10**15  # past any dataset; a larger count overflows the time and cost columns
COMPARE_SUFFIXES = ("html", "htm")


@dataclass(frozen=True)
class ReportSummary:
    out: Path
    format: str
    size_bytes: int
    result_sets: int
    counts: dict[str, int]
    unpriced: tuple[str, ...]  # device kinds with measured cells but no price


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step, where an output may go (``hpubench.present.outfile``)."""
    write_output(path, data)


def resolve_format(out: Path, fmt: str | None) -> str:
    """``--format`` wins; without it the output's suffix decides (report.csv is CSV); an unknown suffix
    is an error listing the known ones."""
    if fmt is None:
        check_suffix(out, FORMATS)
        return out.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


def make_tables(prices_file: str | os.PathLike[str] | None) -> Tables:
    return load_tables(prices_file) if prices_file is not None else Tables()


def _with_price_here(tables: Tables, sets: Sequence[ResultSet], price_here: float) -> Tables:
    """``--price-here`` prices "the machine the results ran on", so they must have run on one kind."""
    check_price(price_here, "--price-here")
    kinds = sorted({k for rs in sets for k in rs.device_kinds})
    if len(kinds) != 1:
        shown = ", ".join(f"{name} ({acc})" for acc, name in kinds) or "none recorded"
        raise UsageError(
            f"--price-here sets one price, but the results ran on {len(kinds)} device kinds ({shown}); "
            "fix: give a --prices file with one [[price]] entry per device"
        )
    acc, name = kinds[0]
    return tables.with_price_here(acc, name, price_here)


def _encode(df: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "csv":
        return df.to_csv(index=False).encode()
    if fmt == "json":
        return (df.to_json(orient="records", indent=1, double_precision=15) + "\n").encode()
    try:
        import pyarrow  # noqa: F401 - deferred: optional; pandas writes parquet through it
    except ImportError:
        raise UsageError(
            "parquet export needs pyarrow; fix: pip install pyarrow (or use --format csv)"
        ) from None
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def report(
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    fmt: str | None = None,
    prices_file: str | os.PathLike[str] | None = None,
    price_here: float | None = None,
    epoch_samples: int | None = None,
) -> ReportSummary:
    out = Path(out)
    fmt = resolve_format(out, fmt)
    check_target(out)  # before the work: the write checks again
    if not paths:
        raise UsageError("give at least one results directory or cells.jsonl file")
    if epoch_samples is not None and not 1 <= epoch_samples <= MAX_EPOCH_SAMPLES:
        raise UsageError(
            f"--epoch-samples must be a number of samples from 1 to {MAX_EPOCH_SAMPLES:.0e}, "
            f"got {str(epoch_samples)[:30]}"
        )
    tables = make_tables(prices_file)
    twice = same_results(paths)
    if twice is not None:
        raise UsageError(f"{twice[0]} and {twice[1]} are the same results; fix: give each run once")
    sets = load_result_sets(paths)
    if price_here is not None:
        tables = _with_price_here(tables, sets, price_here)
    df = cell_frame(sets, tables, epoch_samples)
    ok = measured(df)
    unpriced = tuple(sorted(set(ok.loc[ok["price_name"].isna(), "hardware"])))
    if fmt == "html":
        data = report_html(sets, df, tables, epoch_samples, unpriced).encode()
    else:
        data = _encode(export.with_columns(df), fmt)
    write_atomic(out, data)
    counts = {s: int((df["status"] == s).sum()) for s in ("ok", "failed", "skipped")}
    return ReportSummary(out, fmt, len(data), len(sets), counts, unpriced)


def _only(rs: ResultSet, accelerator: str | None, side: str) -> ResultSet:
    if accelerator is None:
        return rs
    kept = tuple(r for r in rs.results if r.cell.accelerator == accelerator)
    if not kept:
        found = ", ".join(sorted({r.cell.accelerator for r in rs.results})) or "none"
        raise UsageError(f"{side} {rs.path} has no {accelerator} cells (it has: {found})")
    return ResultSet(rs.label, rs.path, rs.meta, kept)


def comparison(
    base: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    prices_file: str | os.PathLike[str] | None = None,
    base_accelerator: str | None = None,
    candidate_accelerator: str | None = None,
    statistic: str = COMPARE_STATISTIC,
) -> Comparison:
    if statistic not in LOCATIONS:
        raise UsageError(f"--statistic must be one of {', '.join(LOCATIONS)}, got {statistic!r}")
    check_suffix(Path(out), COMPARE_SUFFIXES)
    check_target(out)  # before the work: the write checks again
    tables = make_tables(prices_file)
    b = _only(load_result_set(base), base_accelerator, "base")
    c = _only(load_result_set(candidate), candidate_accelerator, "candidate")
    if b.label == c.label:
        b = ResultSet(f"{b.label} (base)", b.path, b.meta, b.results)
        c = ResultSet(f"{c.label} (candidate)", c.path, c.meta, c.results)
    result = compare(
        b.results, c.results, tables, base_label=b.label, candidate_label=c.label, statistic=statistic
    )
    write_atomic(out, compare_html(result, b, c, tables).encode())
    return result
