import dataclasses
import re
from pathlib import Path

import pytest

from hpubench.analysis.peaks import (
    PEAKS,
    PeakEntry,
    PeakFigure,
    entry_for,
    mfu,
    mixed_peak,
    peak_for,
    share_in_tf32,
)
from hpubench.precision.spec import PRECISIONS

HARDWARE_MD = Path(__file__).resolve().parents[3] / "shared" / "hardware.md"

MATCHES = [
    ("hpu", "GAUDI", "Gaudi (HL-205)"),
    ("hpu", "gaudi", "Gaudi (HL-205)"),
    ("hpu", "GAUDI2", "Gaudi2 (HL-225H)"),
    ("hpu", "GAUDI3", "Gaudi3 (HL-325L)"),
    ("hpu", " gaudi3 ", "Gaudi3 (HL-325L)"),
    ("cuda", "NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
    ("cuda", "NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("cuda", "NVIDIA H200", "H200 SXM"),
    ("cpu", "Intel(R) Xeon(R) Platinum 8480+", "CPU, Xeon 8480+ socket"),
    ("cpu", "Intel(R) Xeon(R) Platinum 8480C", "CPU, Xeon 8480+ socket"),
]

UNMATCHED = [
    ("hpu", "GAUDIX"),  # not exactly "GAUDI", not a known later generation
    # The bridge names every Gaudi2 sub-type "GAUDI2" and every Gaudi3 part "GAUDI3" (Synapse's
    # GetDeviceNameByDevType); a suffixed name comes from elsewhere and no figure is published for it.
    ("hpu", "GAUDI2B"),
    ("hpu", "GAUDI2C"),
    ("hpu", "GAUDI2D"),
    ("hpu", "GAUDI3B"),
    ("hpu", ""),
    ("cuda", "NVIDIA A100-SXM4-40GB"),  # a different memory size than the table's 80GB part
    ("cuda", "NVIDIA A100-PCIE-40GB"),
    ("cuda", "NVIDIA A100 80GB PCIe"),
    ("cuda", "NVIDIA H100 PCIe"),
    ("cuda", "NVIDIA H100 NVL"),
    ("cuda", "NVIDIA H200 NVL"),
    ("cuda", "NVIDIA GH200 480GB"),
    ("cuda", "Tesla V100-SXM2-16GB"),
    ("cpu", "Intel(R) Xeon(R) Platinum 84800"),
    ("cpu", "AMD EPYC 9554 64-Core Processor"),
    ("cpu", "GAUDI2"),  # right name, wrong accelerator
    ("cuda", "Intel(R) Xeon(R) Platinum 8480+"),
]


@pytest.mark.parametrize(("acc", "name", "entry"), MATCHES)
def test_device_names_match_their_entry(acc, name, entry):
    found = entry_for(acc, name)
    assert found is not None and found.name == entry


@pytest.mark.parametrize(("acc", "name"), UNMATCHED)
def test_unknown_devices_get_no_peak(acc, name):
    assert entry_for(acc, name) is None
    assert all(peak_for(acc, name, p) is None for p in PRECISIONS)


def test_rules_are_mutually_exclusive():
    for acc, name, _ in MATCHES:
        assert sum(e.matches(acc, name) for e in PEAKS) == 1, name


@pytest.mark.parametrize(
    ("acc", "name", "precision", "tflops", "dtype", "estimate"),
    [
        ("hpu", "GAUDI", "bf16-mixed", 60, "bf16", False),  # Intel states it (Hot Chips 2024 deck)
        ("hpu", "GAUDI2", "bf16-true", 432, "bf16", False),
        ("hpu", "GAUDI2", "fp8", 865, "fp8", True),
        ("hpu", "GAUDI3", "32-true", 229, "fp32", True),
        ("hpu", "GAUDI3", "fp8", 1835, "fp8", False),
        ("cuda", "NVIDIA A100-SXM4-80GB", "32-true", 19.5, "fp32", False),
        ("cuda", "NVIDIA H100 80GB HBM3", "bf16-mixed", 989, "bf16", False),
        ("cuda", "NVIDIA H200", "fp8", 1979, "fp8", False),
        ("cpu", "Intel(R) Xeon(R) Platinum 8480+", "bf16-mixed", 115, "bf16", True),
        ("cpu", "Intel(R) Xeon(R) Platinum 8480+", "32-true", 7.2, "fp32", True),
    ],
)
def test_peak_for_maps_precision_to_the_table_figure(acc, name, precision, tflops, dtype, estimate):
    peak = peak_for(acc, name, precision)
    assert isinstance(peak, PeakFigure)
    assert (peak.tflops, peak.dtype, peak.estimate) == (tflops, dtype, estimate)
    assert peak.source


@pytest.mark.parametrize(
    ("acc", "name", "precision"),
    [
        ("hpu", "GAUDI", "32-true"),  # "unknown" in the table
        ("hpu", "GAUDI2", "32-true"),
        ("hpu", "GAUDI", "fp8"),  # "-" in the table
        ("cuda", "NVIDIA A100-SXM4-80GB", "fp8"),
        ("cuda", "NVIDIA H100 80GB HBM3", "16-mixed"),  # no fp16 column: no guess
        ("hpu", "GAUDI2", "16-mixed"),
    ],
)
def test_figures_the_table_does_not_give_are_none(acc, name, precision):
    assert peak_for(acc, name, precision) is None


def test_tf32_figure_on_request():
    peak = peak_for("cuda", "NVIDIA H100 80GB HBM3", "32-true", tf32_share=1.0)
    assert peak is not None and (peak.tflops, peak.dtype) == (495, "tf32")
    assert peak_for("cuda", "NVIDIA H100 80GB HBM3", "bf16-mixed", tf32_share=1.0).dtype == "bf16"
    assert peak_for("hpu", "GAUDI3", "32-true", tf32_share=1.0) is None  # no TF32 figure: no fallback


def test_cpu_figures_are_per_socket():
    peak = peak_for("cpu", "Intel(R) Xeon(R) Platinum 8480+", "32-true")
    assert peak is not None and peak.per == "socket"


def test_unknown_precision_is_an_error():
    with pytest.raises(ValueError):
        peak_for("cuda", "NVIDIA H100 80GB HBM3", "int8")


def test_a_user_table_replaces_the_defaults():
    mine = PeakEntry(
        name="my H100",
        accelerator="cuda",
        pattern=r"H100",
        memory_gb=80,
        memory_bw_tb_s=3.35,
        tdp_w=700,
        bf16=900,
        fp32=None,
        tf32=None,
        fp8=None,
        source="measured by me",
        as_of="2025-01-01",
    )
    peak = peak_for("cuda", "NVIDIA H100 PCIe", "bf16-mixed", table=[mine])
    assert peak is not None and (peak.tflops, peak.source, peak.device) == (900, "measured by me", "my H100")


def test_mfu():
    peak = peak_for("cuda", "NVIDIA H100 80GB HBM3", "bf16-mixed")
    assert mfu(494.5, peak, 1) == pytest.approx(0.5)
    assert mfu(989 * 8 * 0.25, peak, 8) == pytest.approx(0.25)
    assert mfu(100, 200.0, 1) == pytest.approx(0.5)
    assert mfu(0.0, peak, 1) == 0.0


@pytest.mark.parametrize(
    ("achieved", "peak", "world"), [(1, 100.0, 0), (1, 0.0, 1), (-1, 100.0, 1), (float("nan"), 100.0, 1)]
)
def test_mfu_rejects_bad_input(achieved, peak, world):
    with pytest.raises(ValueError):
        mfu(achieved, peak, world)


def test_every_entry_carries_a_source_and_flags_only_its_own_figures():
    for e in PEAKS:
        assert e.source
        assert e.estimates <= {"bf16", "fp32", "tf32", "fp8"}
        for fig in e.estimates:
            assert getattr(e, fig) is not None, (e.name, fig)
        for fig, value, text in e.figure_notes:  # a caveat about a figure the entry no longer has is stale
            assert e.tflops(fig) == value and text.strip(), (e.name, fig, value)


# ---- issue 31: the Gaudi rows against Intel's Hot Chips 2024 deck and the bridge's device names ------------


def test_gaudi2_hbm_bandwidth_is_the_decks():
    entry = entry_for("hpu", "GAUDI2")
    assert entry is not None and entry.memory_bw_tb_s == 2.46  # "Peak HBM BW ... 2.46 TB/s"


def test_gaudi3_tdp_is_left_open_as_the_name_covers_parts_of_600_to_1200_w():
    entry = entry_for("hpu", "GAUDI3")
    assert entry is not None and entry.tdp_w is None
    for part in ("900 W", "1200 W", "HL-338 PCIe 600 W", "450 W"):
        assert part in entry.notes, part


@pytest.mark.parametrize(
    ("name", "precision", "says"),
    [
        ("GAUDI2", "fp8", "fp8 865: no primary source found"),
        ("GAUDI3", "32-true", "fp32 229: no primary source found"),
        ("GAUDI2", "bf16-mixed", "HL-225B"),  # the other part reporting GAUDI2
        ("GAUDI3", "bf16-mixed", "HL-338 PCIe card (600 W)"),  # the other parts reporting GAUDI3
        ("GAUDI3", "fp8", "HL-328/HL-388"),
        ("GAUDI3", "fp8", "fp8 1677"),  # third-party: shipping parts' MME clock
    ],
)
def test_the_peak_source_a_record_keeps_carries_the_figures_caveats(name, precision, says):
    peak = peak_for("hpu", name, precision)
    assert peak is not None and peak.source.startswith("Intel Hot Chips 2024")
    assert says in peak.source


def test_a_caveat_stays_with_its_own_figure():
    bf16 = peak_for("hpu", "GAUDI2", "bf16-mixed")
    assert bf16 is not None and "865" not in bf16.source
    gaudi = peak_for("hpu", "GAUDI", "bf16-mixed")
    assert gaudi is not None and gaudi.source == "Intel Hot Chips 2024 deck; AWS DL1 deep dive (2021)"


def test_a_replaced_figure_does_not_inherit_the_defaults_caveat():
    mine = dataclasses.replace(
        entry_for("hpu", "GAUDI2"), fp8=800.0, source="measured by me", estimates=frozenset()
    )
    peak = peak_for("hpu", "GAUDI2", "fp8", table=[mine])
    assert peak is not None and peak.source == "measured by me"


# ---- the table matches the project's hardware fact sheet -------------------------------------------

_ROW_NAMES = {
    "Gaudi (HL-205)": "Gaudi (HL-205)",
    "Gaudi2 (HL-225H)": "Gaudi2 (HL-225H)",
    "Gaudi3 (HL-325L)": "Gaudi3 (HL-325L)",
    "A100 SXM 80GB": "A100 SXM 80GB",
    "H100 SXM": "H100 SXM",
    "H200 SXM": "H200 SXM",
    "CPU, Xeon 8480+ socket": "CPU, Xeon 8480+ socket",
}


def _number(cell: str) -> float | None:
    m = re.match(r"~?(\d+(?:\.\d+)?)", cell.strip())  # "DDR5", "unknown", "-": no figure
    return float(m.group(1)) if m else None


# Where issue 31 corrected a Gaudi figure against Intel's Hot Chips 2024 deck, the table departs from the fact
# sheet until the sheet is updated: (row, field) -> (the sheet's value before, the table's value).
DEPARTURES = {
    ("Gaudi (HL-205)", "bf16 estimate"): (True, False),
    ("Gaudi2 (HL-225H)", "memory_bw_tb_s"): (2.45, 2.46),
    ("Gaudi3 (HL-325L)", "tdp_w"): (900.0, None),
}


def _agrees(device: str, field: str, table_value: object, sheet_value: object) -> bool:
    """The table says what the sheet says, or what a listed departure says (the sheet as it was, or fixed)."""
    departure = DEPARTURES.get((device, field))
    if departure is None:
        return table_value == sheet_value
    return table_value == departure[1] and sheet_value in departure


@pytest.mark.skipif(not HARDWARE_MD.is_file(), reason="shared/hardware.md is not beside the checkout")
def test_table_matches_hardware_md():
    text = HARDWARE_MD.read_text(encoding="utf-8")
    section = text.split("## Peaks", 1)[1].split("\n## ", 1)[0]
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("|") and not line.startswith("|---") and not line.startswith("| device")
    ]
    by_name = {e.name: e for e in PEAKS}
    assert {r[0] for r in rows} == set(_ROW_NAMES)
    for device, memory, bw, bf16, fp32_tf32, fp8, tdp, source in rows:
        e = by_name[_ROW_NAMES[device]]
        assert _agrees(device, "memory_gb", e.memory_gb, _number(memory)), device
        assert _agrees(device, "memory_bw_tb_s", e.memory_bw_tb_s, _number(bw)), device
        assert _agrees(device, "bf16", e.bf16, _number(bf16)), device
        assert _agrees(device, "fp32", e.fp32, _number(fp32_tf32)), device
        tf32 = re.search(r"\((\d+(?:\.\d+)?)\)", fp32_tf32)
        assert _agrees(device, "tf32", e.tf32, float(tf32.group(1)) if tf32 else None), device
        assert _agrees(device, "fp8", e.fp8, _number(fp8)), device
        assert _agrees(device, "tdp_w", e.tdp_w, _number(tdp)), device
        assert e.source == source, device
        for fig, cell in (("bf16", bf16), ("fp32", fp32_tf32), ("fp8", fp8)):
            flagged = "U" in cell.replace("unknown", "")
            assert _agrees(device, f"{fig} estimate", fig in e.estimates, flagged), (device, fig)


def test_a_mixed_peak_is_the_weighted_harmonic_mean_of_its_parts():
    # Hand-worked: half the FLOPs at 495, half at 67 take 0.5/495 + 0.5/67 = 0.0084728 s per TFLOP.
    assert mixed_peak(67, 495, 0.5) == pytest.approx(118.02, abs=0.01)
    assert mixed_peak(67, 495, 0.0) == 67 and mixed_peak(67, 495, 1.0) == pytest.approx(495)


def test_convolutions_in_tf32_bound_a_32_true_cell_by_the_mixed_peak():
    h100 = "NVIDIA H100 80GB HBM3"
    peak = peak_for("cuda", h100, "32-true", tf32_share=0.5)
    assert peak is not None and peak.tflops == pytest.approx(118.02, abs=0.01)
    assert peak.dtype == "fp32+tf32 (50.0% of FLOPs in tf32)"
    assert peak_for("cuda", h100, "32-true", tf32_share=0.0).tflops == 67
    assert peak_for("cuda", h100, "32-true", tf32_share=1.0).dtype == "tf32"
    assert peak_for("cuda", h100, "bf16-mixed", tf32_share=0.5).dtype == "bf16"  # only fp32 math moves
    assert peak_for("hpu", "GAUDI3", "32-true", tf32_share=0.5) is None  # no TF32 figure: no bound
    with pytest.raises(ValueError, match="tf32_share"):
        peak_for("cuda", h100, "32-true", tf32_share=1.5)


def test_the_tf32_share_is_all_flops_with_tf32_matmuls_else_the_counted_convolutions():
    assert share_in_tf32(True, 0.3) == 1.0 and share_in_tf32(True, None) == 1.0
    assert share_in_tf32(False, 0.3) == 0.3
    assert share_in_tf32(False, None) == 0.0  # not counted (or cuDNN's switch off): no TF32 assumed
