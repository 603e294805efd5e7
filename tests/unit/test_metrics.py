import pytest

from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.peaks import peak_for

STEPS = [0.10, 0.11, 0.09, 0.10, 0.12, 0.10]


def _metrics(**kw):
    args = dict(
        warmup_s=[2.5, 0.2],
        measured_s=STEPS,
        loss_first=7.0,
        loss_last=6.0,
        samples_per_step=64,
        tokens_per_step=64 * 128,
        flops_per_step=10**12,
        world_size=1,
        peak=None,
    )
    args.update(kw)
    return build_metrics(**args)


def test_throughput_is_global_samples_over_measured_time_only():
    m = _metrics()
    assert m.samples_per_s == pytest.approx(64 * 6 / sum(STEPS))
    assert m.tokens_per_s == pytest.approx(m.samples_per_s * 128)
    assert m.samples_per_s_ci[0] < m.samples_per_s < m.samples_per_s_ci[1]
    # the warm-up (compile, capture) is reported apart and never enters the steady state
    assert m.first_step_s == 2.5 and m.warmup_total_s == pytest.approx(2.7) and m.warmup_steps == 2
    assert m.measured_steps == 6


def test_achieved_tflops_and_mfu_against_the_precision_peak():
    peak = peak_for("hpu", "GAUDI2", "bf16-mixed")
    assert peak is not None and peak.tflops == 432
    m = _metrics(peak=peak, world_size=2, flops_per_step=2 * 10**13)
    achieved = 2 * 10**13 * 6 / sum(STEPS) / 1e12
    assert m.achieved_tflops == pytest.approx(achieved)
    assert m.mfu == pytest.approx(achieved / (432 * 2))
    assert m.peak_source and "Hot Chips" in m.peak_source


def test_no_peak_or_no_flops_means_no_mfu_rather_than_a_guess():
    assert _metrics(peak=None).mfu is None
    m = _metrics(flops_per_step=None, peak=peak_for("hpu", "GAUDI2", "bf16-mixed"))
    assert m.achieved_tflops is None and m.mfu is None
    assert _metrics(tokens_per_step=None).tokens_per_s is None
