"""The page's side of the column registry: the report table's cells, each with the tooltip that says how
its figure was made (the peak behind an MFU, the source and date of a price, what memory measured)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hpubench import numfmt
from hpubench.precision import spec as precisions
from hpubench.present.columns.cells import TableCell, number
from hpubench.present.columns.model import FrameRow, Page

# ---- page cells (the report's table) -----------------------------------------------------------------------

NOT_APPLICABLE = "n/a"
MEASURED_HELP = "warm-up excluded; device synchronised around every measured step"


def dollars(x: Any, row: FrameRow) -> str:
    return NOT_APPLICABLE if row.unpriced else numfmt.money(x)


def peak_title(r: FrameRow) -> str:
    if numfmt.missing(r["peak_tflops"]):
        dtype = precisions.peak_dtype(str(r["precision"])) or "?"
        return f"no published {dtype} peak for this device in the peak table: no MFU rather than a guess"
    est = " (ESTIMATE: unconfirmed figure)" if r["peak_estimate"] else ""
    return (
        f"against {numfmt.num(r['peak_tflops'])} TFLOP/s {r['peak_dtype']} per device{est}; "
        f"source: {r['peak_source']}, as of {r['peak_as_of'] or 'undated'}"
    )


def price_title(r: FrameRow) -> str:
    if numfmt.missing(r["price_usd_per_device_hour"]):
        return (
            f"price/performance not applicable: no price table entry matches {r['hardware']}; "
            "give one with --price-here DOLLARS (the machine the results ran on) or --prices FILE"
        )
    est = " (ESTIMATE)" if r["price_estimate"] else ""
    return (
        f"{r['price_name']}: ${r['price_usd_per_device_hour']} per {r['price_per']}-hour{est}; "
        f"source: {r['price_source']}, as of {r['price_as_of'] or 'undated'}; from {r['price_origin']}"
    )


def verdict_cell(reasons: str, badge: str) -> Callable[[Any, FrameRow], TableCell]:
    """A verdict's page cell (quality, numerics): the verdict with its ``reasons`` column as the tooltip and
    a badge class ``badge`` + verdict; "–" (never ok) for a record from before the verdict existed."""

    def cell(v: Any, row: FrameRow) -> TableCell:
        absent = numfmt.missing(v)
        return TableCell(
            numfmt.MISSING if absent else str(v),
            sort="" if absent else str(v),
            title="" if numfmt.missing(row[reasons]) else str(row[reasons]),
            badge_cls="" if absent else f"{badge}{v}",
        )

    return cell


quality_cell = verdict_cell("quality_reasons", "q-")
numerics_cell = verdict_cell("numerics_reasons", "n-")


def mfu_cell(v: Any, row: FrameRow) -> TableCell:
    return number(
        v,
        text=numfmt.pct(v, 2) if not numfmt.missing(v) else ("no peak" if row.ok else numfmt.MISSING),
        title=peak_title(row) if row.ok else "",
        badge="est." if row["peak_estimate"] is True else "",
        badge_cls="est",
    )


def price_cell(v: Any, row: FrameRow) -> TableCell:
    return number(
        v,
        text=dollars(v, row) if row.ok else numfmt.MISSING,
        title=price_title(row) if row.ok else "",
        badge="est." if row["price_estimate"] is True else "",
        badge_cls="est",
    )


def peak_cell(v: Any, row: FrameRow) -> TableCell:
    source = row["memory_source"]
    return number(
        v,
        text=numfmt.mib(v),
        sub=numfmt.rank_mib(row["peak_memory_per_rank_bytes"]),
        title=f"source: {source}" if not numfmt.missing(source) else "",
    )


def with_workload(page: Page) -> bool:
    return bool(page.workload_samples)
