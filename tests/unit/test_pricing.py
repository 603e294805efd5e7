import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reportdata import fake_result

from hpubench.analysis.economics import economics
from hpubench.analysis.pareto import pareto_front
from hpubench.analysis.peaks import PEAKS, entry_for
from hpubench.analysis.pricefile import load_tables
from hpubench.analysis.prices import DEFAULT_ORIGIN, PRICES, Tables, check_price
from hpubench.analysis.stats.summary import Estimate
from hpubench.errors import UsageError

HARDWARE_MD = Path(__file__).resolve().parents[3] / "shared" / "hardware.md"

MATCHES = [
    ("hpu", "GAUDI", "Gaudi (HL-205)"),
    ("hpu", "GAUDI2", "Gaudi2 (HL-225H)"),
    ("hpu", "GAUDI3", "Gaudi3 (HL-325L)"),
    ("cuda", "NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"),
    ("cuda", "NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("cuda", "NVIDIA H200", "H200 SXM"),
    ("cpu", "Intel(R) Xeon(R) Platinum 8480+", "CPU, Xeon Sapphire Rapids socket"),
    ("cpu", "Intel(R) Xeon(R) Gold 6448Y", "CPU, Xeon Sapphire Rapids socket"),
]
UNMATCHED = [
    ("cpu", "AMD EPYC"),  # this machine: no price rather than a guess
    ("cpu", "Intel(R) Xeon(R) Platinum 8580"),  # Emerald Rapids, not the priced Sapphire Rapids
    ("cuda", "NVIDIA A100-SXM4-80GB"),  # the fact sheet prices only the 40GB part (p4d)
    ("cuda", "NVIDIA H100 PCIe"),
    ("cuda", "NVIDIA GH200 480GB"),
    ("hpu", "GAUDIX"),
    ("hpu", "GAUDI2C"),  # a sub-type the bridge never reports (it says GAUDI2): no sourced price
    ("hpu", ""),
    ("cuda", "GAUDI2"),  # right name, wrong accelerator
]


@pytest.mark.parametrize(("acc", "name", "entry"), MATCHES)
def test_device_names_match_their_price(acc, name, entry):
    price = Tables().price_for(acc, name)
    assert price is not None and price.name == entry


@pytest.mark.parametrize(("acc", "name"), UNMATCHED)
def test_unknown_devices_get_no_price(acc, name):
    assert Tables().price_for(acc, name) is None


@pytest.mark.parametrize(("acc", "name", "_"), MATCHES)
def test_prices_and_peaks_agree_on_what_a_device_is(acc, name, _):
    """One matcher for both tables: a device priced as Gaudi2 is never peaked as something else."""
    peak = entry_for(acc, name, PEAKS)
    price = entry_for(acc, name, PRICES)
    if peak is not None and price.accelerator != "cpu":
        assert peak.name == price.name


def test_every_default_carries_source_and_date():
    for p in PRICES:
        assert p.source and p.as_of, p.name
        assert p.origin == DEFAULT_ORIGIN and not p.estimate
        assert p.usd_per_device_hour > 0


# ---- the table matches the project's hardware fact sheet -------------------------------------------

_OFFERS = {
    "AWS dl1.24xlarge (Gaudi)": "Gaudi (HL-205)",
    "Intel Tiber Dev Cloud bm Gaudi2": "Gaudi2 (HL-225H)",
    "Intel Tiber Dev Cloud bm Gaudi3": "Gaudi3 (HL-325L)",
    "AWS p4d.24xlarge (A100 40GB)": "A100 SXM 40GB",
    "AWS p5.48xlarge (H100)": "H100 SXM",
    "AWS p5e.48xlarge (H200), capacity block": "H200 SXM",
    "Intel Tiber bm SPR CPU, 2 sockets": "CPU, Xeon Sapphire Rapids socket",
}


@pytest.mark.skipif(not HARDWARE_MD.is_file(), reason="shared/hardware.md is not beside the checkout")
def test_prices_match_hardware_md():
    section = HARDWARE_MD.read_text(encoding="utf-8").split("## On-demand prices", 1)[1].split("\n## ", 1)[0]
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("|") and not line.startswith(("|---", "| offer"))
    ]
    by_name = {p.name: p for p in PRICES}
    assert {r[0] for r in rows} == set(_OFFERS)
    previous_source = ""
    for offer, devices, instance, per_device, as_of, source in rows:
        p = by_name[_OFFERS[offer]]
        assert p.devices_per_instance == int(devices), offer
        assert p.usd_per_instance_hour == float(instance), offer
        assert p.usd_per_device_hour == float(re.match(r"[\d.]+", per_device).group()), offer
        assert p.as_of == as_of, offer
        source = previous_source if source == "same" else source
        cited, _, unconfirmed = source.partition("; after the cut")
        assert p.source == cited, offer
        if unconfirmed:  # the "U" figure is never used as the price, nor quoted beside it
            assert "unconfirmed" in p.notes and "not used" in p.notes and "55.04" not in p.notes
        previous_source = source
        assert math.isclose(
            p.usd_per_instance_hour / p.devices_per_instance, p.usd_per_device_hour, abs_tol=0.005
        )


# ---- derived figures ----------------------------------------------------------------------------------


def test_economics_of_a_priced_cell():
    # 32 samples x 0.675 TFLOP per device in 0.1 s: 216 TFLOP/s, half of Gaudi2's BF16 peak.
    r = fake_result(
        "bert", "hpu", "GAUDI2", devices=8, step_s=0.1, tokens_per_sample=128, tflop_per_sample=0.675
    )
    e = economics(r, Tables(), workload_samples=1_000_000)
    m = r.metrics
    assert e.world_size == 8 and e.samples_per_s == m.samples_per_s
    assert e.samples_per_s_per_device == pytest.approx(m.samples_per_s / 8)
    assert e.price.name == "Gaudi2 (HL-225H)" and e.usd_per_hour == pytest.approx(1.30 * 8)
    assert e.usd_per_million_samples == pytest.approx(10.40 / (m.samples_per_s * 3600) * 1e6)
    assert e.usd_per_million_tokens == pytest.approx(10.40 / (m.tokens_per_s * 3600) * 1e6)
    assert e.samples_per_usd == pytest.approx(m.samples_per_s * 3600 / 10.40)
    assert e.samples_per_usd * e.usd_per_million_samples == pytest.approx(1e6)
    lo, hi = e.usd_per_million_samples_ci
    assert lo <= e.usd_per_million_samples <= hi  # the cheap end comes from the fast end of throughput
    assert lo == pytest.approx(10.40 / (m.samples_per_s_ci[1] * 3600) * 1e6)
    assert e.workload_time_s == pytest.approx(1e6 / m.samples_per_s)
    assert e.workload_cost_usd == pytest.approx(e.workload_time_s / 3600 * 10.40)
    assert (e.peak.tflops, e.peak.dtype, e.peak.estimate) == (432, "bf16", False)
    assert e.mfu == pytest.approx(0.5, rel=0.05)


def test_unpriced_device_gets_no_dollar_figures_and_unpeaked_no_mfu():
    r = fake_result("mlp", "cpu", "AMD EPYC", precision="32-true")
    e = economics(r, Tables(), workload_samples=1000)
    assert e.price is None and e.peak is None and e.mfu is None
    assert e.usd_per_hour is e.usd_per_million_samples is e.samples_per_usd is e.workload_cost_usd is None
    assert e.workload_time_s == pytest.approx(1000 / r.metrics.samples_per_s)  # time needs no price


def test_mfu_uses_the_tf32_peak_where_the_run_allowed_tf32():
    r = fake_result(
        "resnet",
        "cuda",
        "NVIDIA H100 80GB HBM3",
        precision="32-true",
        env_flags={"allow_tf32_matmul": "True"},
    )
    e = economics(r, Tables())
    assert (e.peak.dtype, e.peak.tflops) == ("tf32", 495)
    # 32 samples x 0.1046875 TFLOP in 0.1 s: 33.5 TFLOP/s, half the FP32 peak of 67.
    plain = fake_result(
        "resnet", "cuda", "NVIDIA H100 80GB HBM3", precision="32-true", tflop_per_sample=0.1046875
    )
    assert economics(plain, Tables()).peak.tflops == 67
    assert economics(plain, Tables()).mfu == pytest.approx(0.5, rel=0.05)


def test_estimated_peak_is_flagged():
    """Gaudi2's fp8 865 has no primary source (issue 31): its MFU is flagged; Gaudi's bf16 60 is stated."""
    e = economics(fake_result("bert", "hpu", "GAUDI2", precision="fp8"), Tables())
    assert e.peak.estimate and e.peak.tflops == 865
    assert not economics(fake_result("bert", "hpu", "GAUDI"), Tables()).peak.estimate


def test_a_throughput_over_repetitions_carries_tokens_and_flops_along():
    r = fake_result("gpt", "hpu", "GAUDI3", tokens_per_sample=64)
    m = r.metrics
    double = Estimate(2 * m.samples_per_s, 1.9 * m.samples_per_s, 2.1 * m.samples_per_s, 0.95, "test")
    e = economics(r, Tables(), samples_per_s=double)
    assert e.samples_per_s_ci == (double.lo, double.hi)
    assert e.tokens_per_s == pytest.approx(2 * m.tokens_per_s)
    assert e.achieved_tflops == pytest.approx(2 * m.achieved_tflops)


def test_failed_cells_have_no_economics():
    assert economics(fake_result("gpt", "hpu", "GAUDI2", status="failed", reason="x"), Tables()) is None


def test_price_here_prices_exactly_that_device_first():
    t = Tables().with_price_here("cpu", "AMD EPYC", 0.25)
    p = t.price_for("cpu", "AMD EPYC")
    assert p.usd_per_device_hour == 0.25 and p.origin == "--price-here"
    assert t.price_for("cpu", "AMD EPYC 9554") is None  # the exact name only, not a family
    assert t.price_for("hpu", "GAUDI2").name == "Gaudi2 (HL-225H)"


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_prices_must_be_positive_numbers(bad):
    with pytest.raises(UsageError, match="positive"):
        check_price(bad, "--price-here")


# ---- the user's price file ------------------------------------------------------------------------------


def _file(tmp_path, text: str) -> Path:
    p = tmp_path / "prices.toml"
    p.write_text(text)
    return p


def test_price_file_replaces_a_default_and_adds_an_entry(tmp_path):
    f = _file(
        tmp_path,
        """
[[price]]
name = "Gaudi2 (HL-225H)"
usd_per_device_hour = 1.05
source = "our contract"

[[price]]
name = "lab EPYC box"
accelerator = "cpu"
match = "EPYC"
usd_per_device_hour = 0.4
estimate = true

[[peak]]
name = "Gaudi (HL-205)"
bf16 = 55

[[peak]]
name = "EPYC peak"
accelerator = "cpu"
match = "EPYC"
fp32 = 2.5
source = "measured with a GEMM loop"
as_of = "2025-06"
""",
    )
    t = load_tables(f)
    g2 = t.price_for("hpu", "GAUDI2")
    assert (g2.usd_per_device_hour, g2.source, g2.as_of, g2.origin) == (1.05, "our contract", None, str(f))
    assert g2.pattern == next(p.pattern for p in PRICES if p.name == g2.name)  # unchanged where not given
    epyc = t.price_for("cpu", "AMD EPYC")
    assert epyc.name == "lab EPYC box" and epyc.estimate and epyc.source == f"user file {f}"
    assert t.prices[0].name == "lab EPYC box"  # new entries are tried first
    gaudi_peak = t.peak_for("hpu", "GAUDI", "bf16-mixed")
    # The user's figure is the user's: not flagged as the fact sheet's estimate, and not cited to it.
    assert (gaudi_peak.tflops, gaudi_peak.estimate, gaudi_peak.source) == (55, False, f"user file {f}")
    assert t.peak_for("cpu", "AMD EPYC", "32-true").tflops == 2.5
    assert len(t.prices) == len(PRICES) + 1 and len(t.peaks) == len(PEAKS) + 1


def test_changing_only_the_match_keeps_the_citation(tmp_path):
    t = load_tables(_file(tmp_path, '[[price]]\nname = "Gaudi2 (HL-225H)"\nmatch = "HL-225"\n'))
    p = t.price_for("hpu", "HL-225H")
    assert p.source == "Intel gaudi-reference-cloud docs" and p.as_of == "2025-02-28"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[price]\nname=1", "invalid TOML"),
        ('[[price]]\nname = "x"\nusd_per_hour = 1', "unknown key 'usd_per_hour'"),
        ('[[price]]\nname = "Gaudi2 (HL-225H)"\nusd_per_device_hour = -1', "usd_per_device_hour = -1"),
        ('[[price]]\nname = "Gaudi2 (HL-225H)"\nusd_per_device_hour = 0', "usd_per_device_hour = 0"),
        ('[[price]]\nname = "Gaudi2 (HL-225H)"\nusd_per_device_hour = true', "usd_per_device_hour = True"),
        ('[[price]]\nname = "Gaudi2 (HL-225H)"\nusd_per_device_hour = "1.3"', "expected a number"),
        ('[[price]]\nname = "new"\naccelerator = "cpu"\nusd_per_device_hour = 1', "needs 'match'"),
        ('[[price]]\nname = "new"\naccelerator = "tpu"\nmatch = "x"', "accelerator = 'tpu'"),
        ('[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "("', "not a valid regular expression"),
        ('[[price]]\nname = "new"\naccelerator = "cpu"\nmatch = "x"', "needs 'usd_per_device_hour'"),
        ('[[price]]\nname = "H200 SXM"\n[[price]]\nname = "H200 SXM"', "appears twice"),
        ("[[price]]\nusd_per_device_hour = 1", "non-empty name"),
        ('price = "cheap"', "array of tables"),
        ("[prices]\nx = 1", "unknown key(s) prices"),
        ('[[peak]]\nname = "H100 SXM"\nestimates = ["fp16"]', "estimates"),
        ('[[peak]]\nname = "H100 SXM"\nbf16 = -5', "bf16 = -5"),
    ],
)
def test_bad_price_files_are_one_line_naming_the_problem(tmp_path, text, message):
    f = _file(tmp_path, text)
    with pytest.raises(UsageError) as e:
        load_tables(f)
    msg = str(e.value)
    assert str(f) in msg and message in msg and "\n" not in msg


def test_missing_price_file(tmp_path):
    with pytest.raises(UsageError, match="no such price file"):
        load_tables(tmp_path / "nope.toml")


# ---- Pareto frontier ------------------------------------------------------------------------------------


def test_pareto_front_keeps_only_undominated_points():
    pts = [(1.0, 10.0), (2.0, 5.0), (3.0, 20.0), (0.5, 1.0), (3.0, 20.0), (3.0, 15.0), (4.0, 20.0)]
    # (2,5) is dearer and slower than (1,10); (3,15) and (4,20) are beaten by (3,20); duplicates both stay.
    assert pareto_front(pts) == [3, 0, 2, 4]
    assert pareto_front([]) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 100), st.floats(0.01, 100)), max_size=30))
def test_pareto_front_properties(points):
    front = set(pareto_front(points))

    def dominates(a, b):
        return a[0] <= b[0] and a[1] >= b[1] and a != b

    for i, p in enumerate(points):
        beaten = any(dominates(q, p) for q in points)
        assert (i in front) == (not beaten)


def test_mfu_of_a_32_true_cell_whose_convolutions_ran_in_tf32_uses_the_mixed_peak():
    def cell(flags: dict[str, str], share: float | None):
        facts = {} if share is None else {"flops_conv_share": share}
        return fake_result(
            "resnet", "cuda", "NVIDIA H100 80GB HBM3", precision="32-true", env_flags=flags, facts=facts
        )

    cudnn_on = {"allow_tf32_matmul": "False", "allow_tf32_cudnn": "True"}
    mixed = economics(cell(cudnn_on, 0.5), Tables())
    assert mixed.peak.tflops == pytest.approx(118.02, abs=0.01)  # 1 / (0.5/495 + 0.5/67)
    assert mixed.mfu == pytest.approx(economics(cell({}, None), Tables()).mfu * 67 / 118.02, rel=1e-3)
    # cuDNN's switch off, or no count of the convolutions in the record: the FP32 peak, as before.
    assert economics(cell({**cudnn_on, "allow_tf32_cudnn": "False"}, 0.5), Tables()).peak.tflops == 67
    assert economics(cell(cudnn_on, None), Tables()).peak.tflops == 67
    # Matmuls in TF32 as well: all of the step's fp32 math is TF32.
    assert economics(cell({**cudnn_on, "allow_tf32_matmul": "True"}, 0.5), Tables()).peak.dtype == "tf32"
