"""Published peak figures per device, and the lookup that turns a recorded device name into one.

Every figure here comes from the project's hardware fact sheet (``shared/hardware.md``), with the source
and date it cites, except where issue 31 checked the Gaudi rows against Intel's Hot Chips 2024 deck (first-
generation BF16 60 confirmed, Gaudi2 HBM 2.46 TB/s, Gaudi3 TDP left open: see the entries). Figures marked
"U" (unconfirmed or third-party) carry ``estimate=True`` so a report can flag MFU computed against them;
figures given as "unknown" or "-" are ``None``, never filled in. A device no rule matches gets no peak at
all: an MFU against a guessed peak is worse than none.

A figure that needs a caveat wherever it is used (no primary source, or a name that also covers parts the
figure is not published for) carries it in ``figure_notes``; :func:`peak_for` appends it to the source the
record keeps, and only while the figure is still the one the caveat is about (a user's replacement figure
from a ``--prices`` file does not inherit it).

Match rules are regular expressions searched (case-insensitively) in the device name the worker recorded.
The NVIDIA rules are stricter than "contains H100": PCIe and NVL boards have lower clocks and power and a
GH200 contains the letters "H200", so all of those stay unmatched rather than borrowing an SXM peak. The
Gaudi rules are exact: the bridge's ``get_device_name()`` is Synapse's ``GetDeviceNameByDevType``, which
returns only "GAUDI", "GAUDI2" and "GAUDI3" (every Gaudi2 sub-type and every Gaudi3 part included), so a
name such as "GAUDI2B" comes from elsewhere (old docs, a hand-written file) and gets no figure, since none is
published for it. Where one bridge name covers several parts, the figures are those every part shares or
the caveat says whose they are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from hpubench.precision import spec as precisions


def device_matches(entry_accelerator: str, pattern: str, accelerator: str, device_name: str) -> bool:
    """The one matching rule for every device table (peaks, prices), so a name never matches one and not
    the other: same accelerator, and ``pattern`` searched case-insensitively in the stripped name."""
    return accelerator == entry_accelerator and re.search(pattern, device_name.strip(), re.I) is not None


class DeviceRule(Protocol):
    def matches(self, accelerator: str, device_name: str) -> bool: ...


EntryT = TypeVar("EntryT", bound=DeviceRule)


@dataclass(frozen=True)
class PeakEntry:
    """One row of the peak table: a device kind and its published dense per-device figures."""

    name: str
    accelerator: str  # registry name: "hpu", "cuda", "cpu"
    pattern: str  # regex searched case-insensitively in the recorded device name
    memory_gb: float | None
    memory_bw_tb_s: float | None  # HBM bandwidth (DDR bandwidth for the CPU row)
    tdp_w: float | None
    bf16: float | None  # dense TFLOP/s
    fp32: float | None
    tf32: float | None
    fp8: float | None
    source: str
    as_of: str | None  # the date(s) the source carries; None where the table gives none
    estimates: frozenset[str] = frozenset()  # names of figures the table marks "U"
    per: str = "device"  # "socket" for the CPU row: its figures are for a whole socket
    notes: str = ""
    # (dtype, the figure, caveat): said beside that figure in every record while the figure is unchanged
    figure_notes: tuple[tuple[str, float, str], ...] = ()

    def matches(self, accelerator: str, device_name: str) -> bool:
        return device_matches(self.accelerator, self.pattern, accelerator, device_name)

    def tflops(self, dtype: str) -> float | None:
        if dtype not in precisions.DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(precisions.DTYPES)}")
        return getattr(self, dtype, None)

    def source_for(self, dtypes: Sequence[str]) -> str:
        """The source of a peak made of the ``dtypes`` figures, with their caveats: a record that keeps only
        the source still says that a figure is third-party or belongs to one part of several."""
        caveats = [
            text
            for dtype, value, text in self.figure_notes
            if dtype in dtypes and self.tflops(dtype) == value
        ]
        return "; ".join([self.source, *caveats])


@dataclass(frozen=True)
class PeakFigure:
    """The peak a measurement is compared against, with where it came from."""

    tflops: float
    dtype: str
    estimate: bool
    source: str
    device: str  # the table entry's name
    as_of: str | None = None
    per: str = "device"


_NOT_PCIE_NVL = r"^(?!.*\b(?:PCIE|NVL)\b)"
_HOT_CHIPS = "Intel Hot Chips 2024"
_STAS00 = "stas00/ml-engineering, a third party"
_GAUDI2_OTHERS = "the HL-225B (Gaudi2 for China) also reports GAUDI2, and no TFLOP/s was found for it"
_GAUDI3_OTHERS = (
    "the HL-338 PCIe card (600 W) and the HL-328/HL-388 for China (450 W) also report GAUDI3, and no "
    "TFLOP/s was found for them"
)


def _one_part(dtype: str, value: float, part: str, others: str) -> tuple[str, float, str]:
    """The caveat of a figure published for one part of several that report the same name."""
    return (dtype, value, f"{dtype} {value:g} is the {part}'s: {others}")


PEAKS: tuple[PeakEntry, ...] = (
    PeakEntry(
        name="Gaudi (HL-205)",
        accelerator="hpu",
        pattern=r"^GAUDI$",  # first generation reports exactly "GAUDI"
        memory_gb=32,
        memory_bw_tb_s=0.90,
        tdp_w=400,
        bf16=60,  # stated by Intel in the Hot Chips 2024 deck (issue 31): no longer an estimate
        fp32=None,
        tf32=None,
        fp8=None,
        source="Intel Hot Chips 2024 deck; AWS DL1 deep dive (2021)",
        as_of="2024; 2021",
        notes="Synapse maps the HL-2000M device id to the same name (GAUDI); no separate figures found",
    ),
    PeakEntry(
        name="Gaudi2 (HL-225H)",
        accelerator="hpu",
        pattern=r"^GAUDI2$",  # every Gaudi2 sub-type reports exactly this; GAUDI2B/C/D get nothing
        memory_gb=96,
        memory_bw_tb_s=2.46,  # Hot Chips 2024 deck "Peak HBM BW 2.46 TB/s" (hardware.md: 2.45)
        tdp_w=600,
        bf16=432,
        fp32=None,
        tf32=None,
        fp8=865,
        source=f"{_HOT_CHIPS}; Intel Gaudi2 article (2022)",
        as_of="2024; 2022",
        estimates=frozenset({"fp8"}),
        notes="HL-225H (OAM, 600 W); the HL-225B for China reports GAUDI2 too (96 GB, ~2.4 TB/s per "
        "TechNode 2023-07-12; TFLOP/s and TDP unpublished)",
        figure_notes=(
            _one_part("bf16", 432, "HL-225H", _GAUDI2_OTHERS),
            (
                "fp8",
                865,
                f"fp8 865: no primary source found (only {_STAS00}, citing Intel's Gaudi 2 white paper)",
            ),
            _one_part("fp8", 865, "HL-225H", _GAUDI2_OTHERS),
        ),
    ),
    PeakEntry(
        name="Gaudi3 (HL-325L)",
        accelerator="hpu",
        pattern=r"^GAUDI3$",  # HL-325L, HL-335, HL-338 and the China HL-328/HL-388 all report this
        memory_gb=128,
        memory_bw_tb_s=3.67,
        tdp_w=None,  # the name does not tell which part: 900, 1200, 600 or 450 W (notes)
        bf16=1835,
        fp32=229,
        tf32=None,
        fp8=1835,
        source=_HOT_CHIPS,
        as_of="2024",
        estimates=frozenset({"fp32"}),
        notes="TDP by part: OAM 900 W air-cooled, 1200 W liquid-cooled (Hot Chips 2024 deck); HL-338 PCIe "
        "600 W, HL-328/HL-388 for China 450 W (The Register 2024-04-12, citing Intel's Gaudi 3 white paper)",
        figure_notes=(
            *(_one_part(d, 1835, "HL-325L OAM", _GAUDI3_OTHERS) for d in ("bf16", "fp8")),
            *(
                (d, 1835, f"shipping parts run the MME at 1600 MHz, i.e. {d} 1677 (per {_STAS00})")
                for d in ("bf16", "fp8")
            ),
            (
                "fp32",
                229,
                f"fp32 229: no primary source found (only {_STAS00}; Intel gives partial figures only)",
            ),
            _one_part("fp32", 229, "HL-325L OAM", _GAUDI3_OTHERS),
        ),
    ),
    PeakEntry(
        name="A100 SXM 80GB",
        accelerator="cuda",
        pattern=_NOT_PCIE_NVL + r"(?=.*\b80GB\b).*\bA100\b",
        memory_gb=80,
        memory_bw_tb_s=2.039,
        tdp_w=400,
        bf16=312,
        fp32=19.5,
        tf32=156,
        fp8=None,
        source="NVIDIA A100 datasheet",
        as_of=None,
    ),
    PeakEntry(
        name="H100 SXM",
        accelerator="cuda",
        pattern=_NOT_PCIE_NVL + r".*\bH100\b",
        memory_gb=80,
        memory_bw_tb_s=3.35,
        tdp_w=700,
        bf16=989,
        fp32=67,
        tf32=495,
        fp8=1979,
        source="NVIDIA Hopper whitepaper",
        as_of=None,
    ),
    PeakEntry(
        name="H200 SXM",
        accelerator="cuda",
        pattern=_NOT_PCIE_NVL + r".*\bH200\b",
        memory_gb=141,
        memory_bw_tb_s=4.8,
        tdp_w=700,
        bf16=989,
        fp32=67,
        tf32=495,
        fp8=1979,
        source="MLCommons H200 system description (2024); NVIDIA",
        as_of="2024",
    ),
    PeakEntry(
        name="CPU, Xeon 8480+ socket",
        accelerator="cpu",
        pattern=r"\b8480(?!\d)",
        memory_gb=None,
        memory_bw_tb_s=0.307,
        tdp_w=350,
        bf16=115,
        fp32=7.2,
        tf32=None,
        fp8=None,
        source="derived from core count and clocks",
        as_of=None,
        estimates=frozenset({"bf16", "fp32"}),
        per="socket",
        notes="DDR5 memory; bandwidth, BF16 (AMX) and FP32 figures are derived, not published",
    ),
)


def entry_for(
    accelerator: str,
    device_name: str,
    table: Sequence[EntryT] = PEAKS,  # type: ignore[assignment]
) -> EntryT | None:
    """The first table entry whose rule matches, or None: an unknown device never borrows a peak (or a
    price: the price table is searched with this same function)."""
    if not device_name:
        return None
    return next((e for e in table if e.matches(accelerator, device_name)), None)


def peak_for(
    accelerator: str,
    device_name: str,
    precision: str,
    *,
    tf32_share: float = 0.0,
    table: Sequence[PeakEntry] = PEAKS,
) -> PeakFigure | None:
    """The peak TFLOP/s a cell at ``precision`` on this device is bounded by, or None if not known.

    ``tf32_share`` is the share of a 32-true step's FLOPs that ran in TF32: 1 where matmuls may (a CUDA run
    with TF32 matmuls allowed is bounded by the TF32 peak, not the FP32 one), the convolutions' share where
    only cuDNN's own switch let them (the bound is then :func:`mixed_peak` of the two figures), 0 where
    nothing did. Where the table has no TF32 figure the answer is None, never a fall-back to FP32.
    ``table`` lets a user's own figures replace the defaults.
    """
    if not 0.0 <= tf32_share <= 1.0:
        raise ValueError(f"tf32_share must be within 0-1, got {tf32_share}")
    declared = precisions.peak_dtype(precision)  # which peak bounds it: hpubench.precision.spec
    if declared is None:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(precisions.names())}")
    entry = entry_for(accelerator, device_name, table)
    if entry is None:
        return None
    share = tf32_share
    dtype = declared
    if declared == "fp32" and share == 1.0:
        dtype = "tf32"
    value = entry.tflops(dtype)
    estimate = dtype in entry.estimates
    parts = [dtype]
    if declared == "fp32" and 0.0 < share < 1.0:
        tf32_value = entry.tflops("tf32")
        if value is None or tf32_value is None:
            return None  # no figure for one of the two parts: no bound, rather than a wrong one
        value = mixed_peak(float(value), float(tf32_value), share)
        dtype = f"fp32+tf32 ({share:.1%} of FLOPs in tf32)"
        estimate = bool({"fp32", "tf32"} & entry.estimates)
        parts = ["fp32", "tf32"]
    if value is None:
        return None
    return PeakFigure(
        tflops=float(value),
        dtype=dtype,
        estimate=estimate,
        source=entry.source_for(parts),
        device=entry.name,
        as_of=entry.as_of,
        per=entry.per,
    )


def share_in_tf32(matmul_tf32: bool, conv_share: float | None) -> float:
    """The ``tf32_share`` of :func:`peak_for`: every FLOP where matmuls run in TF32, else the convolutions'
    share where only cuDNN's switch let them run so (None: not counted, or the switch was off), else 0."""
    if matmul_tf32:
        return 1.0
    return 0.0 if conv_share is None else conv_share


def mixed_peak(base_tflops: float, fast_tflops: float, fast_share: float) -> float:
    """The rate bound of work of which ``fast_share`` runs at ``fast_tflops`` and the rest at
    ``base_tflops``: the time at peak adds up per part, so the bound is the weighted harmonic mean."""
    return 1.0 / (fast_share / fast_tflops + (1.0 - fast_share) / base_tflops)


def mfu(achieved_tflops: float, peak: PeakFigure | float, world_size: int) -> float:
    """Model FLOPs utilisation: achieved TFLOP/s over all ranks divided by the peak of all ranks.

    ``achieved_tflops`` is the whole job's rate (model FLOPs per step times steps per second), so it is
    compared with ``world_size`` times the per-device peak. For a per-socket peak (the CPU row) pass the
    number of sockets the job spans, not its number of ranks.
    """
    p = peak.tflops if isinstance(peak, PeakFigure) else float(peak)
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    if not math.isfinite(p) or p <= 0:
        raise ValueError(f"peak must be a positive TFLOP/s figure, got {p}")
    if not math.isfinite(achieved_tflops) or achieved_tflops < 0:
        raise ValueError(f"achieved_tflops must be a non-negative finite number, got {achieved_tflops}")
    return achieved_tflops / (p * world_size)
