"""The estimator's formulas (hpubench.plan.cost): memory per device, step time, sources, parsing."""

from __future__ import annotations

import pytest

from hpubench.plan import cost as E
from hpubench.plan.autosteps import LEAD_IN_STEPS
from hpubench.plan.cost import Calibration, ModelFacts

GPT_STD = ModelFacts(
    params=124_439_808,
    flops=6_999_559_372_800,
    ops=1674,
    activation_bytes_fp32=7_331_535_876,
    batch_bytes_fp32=65_536,
    optimizer="adamw",
)
RESNET = ModelFacts(
    params=25_557_032,
    flops=3_110_281_936_896,
    ops=896,
    activation_bytes_fp32=5_000_000_000,
    batch_bytes_fp32=77_070_848,
    optimizer="sgd",
)
CAL = Calibration(tflops={"fp32": 0.1, "bf16": 0.001}, per_op_s=1e-5, source="calibrated here")


def test_memory_adamw_fp32_counts_weights_grads_two_states_and_a_transient():
    facts = ModelFacts(params=1_000_000, flops=1, ops=1, activation_bytes_fp32=0, batch_bytes_fp32=0)
    # 4 (weights) + 4 (grads) + 2 x 4 (Adam moments) + 4 (foreach temporaries) = 20 bytes per parameter
    assert E.memory_bytes(facts, "32-true") == E.BASELINE_BYTES + 20_000_000


def test_compile_mode_adds_its_generated_code():
    facts = ModelFacts(params=10, flops=1, ops=1, activation_bytes_fp32=0, batch_bytes_fp32=0)
    assert (
        E.memory_bytes(facts, "32-true", mode="compile") == E.memory_bytes(facts, "32-true") + E.COMPILE_BYTES
    )


def test_several_ranks_add_ddps_gradient_buckets():
    facts = ModelFacts(params=1_000_000, flops=1, ops=1, activation_bytes_fp32=0, batch_bytes_fp32=0)
    two = E.memory_bytes(facts, "32-true", world_size=2)
    assert two == E.memory_bytes(facts, "32-true") + 4_000_000 + E.DIST_BYTES


def test_memory_sgd_has_one_state_and_bf16_true_halves_everything_per_parameter():
    facts = ModelFacts(
        params=1_000_000, flops=1, ops=1, activation_bytes_fp32=0, batch_bytes_fp32=0, optimizer="sgd"
    )
    assert E.memory_bytes(facts, "32-true") == E.BASELINE_BYTES + 16_000_000
    assert E.memory_bytes(facts, "bf16-true") == E.BASELINE_BYTES + 8_000_000


def test_memory_mixed_precision_adds_the_cached_low_precision_weight_copy_and_shrinks_activations():
    facts = ModelFacts(
        params=1_000_000, flops=1, ops=1, activation_bytes_fp32=10_000_000, batch_bytes_fp32=1000
    )
    fp32 = E.memory_bytes(facts, "32-true")
    mixed = E.memory_bytes(facts, "bf16-mixed")
    assert fp32 == E.BASELINE_BYTES + 20_000_000 + 10_000_000 + E.N_BATCHES * 1000
    assert mixed == E.BASELINE_BYTES + 22_000_000 + int(10_000_000 * E.MIXED_ACTIVATION) + E.N_BATCHES * 1000


def test_step_time_is_flops_over_the_calibrated_rate_at_the_precisions_dtype_plus_dispatch():
    step, source = E.step_time_s(GPT_STD, "32-true", CAL, None)
    expected = GPT_STD.flops / (0.1e12 * E.MODEL_EFFICIENCY) + GPT_STD.ops * 1e-5
    assert step == pytest.approx(expected)
    assert "calibrated here" in source and "fp32" in source and "assumed" in source
    slow, source16 = E.step_time_s(GPT_STD, "bf16-mixed", CAL, None)
    assert slow > 50 * step and "bf16" in source16  # the bf16 rate bounds a bf16-mixed cell


def test_ranks_sharing_one_device_divide_its_rate():
    one, _ = E.step_time_s(RESNET, "32-true", CAL, None, ranks_sharing=1)
    two, _ = E.step_time_s(RESNET, "32-true", CAL, None, ranks_sharing=2)
    assert two == pytest.approx(2 * one)


def test_without_calibration_the_published_peak_times_an_assumed_efficiency_is_used_and_said():
    step, source = E.step_time_s(GPT_STD, "bf16-mixed", None, 432.0)
    assert step == pytest.approx(GPT_STD.flops / (432e12 * E.ASSUMED_PEAK_EFFICIENCY))
    assert "published" in source and str(E.ASSUMED_PEAK_EFFICIENCY) in source


def test_no_rate_at_all_gives_no_time_rather_than_a_guess():
    est = E.estimate_cell(
        precision="32-true",
        mode="eager",
        world_size=1,
        ranks_sharing=1,
        facts=GPT_STD,
        calibration=None,
        peak_tflops=None,
    )
    assert est.step_s is None and est.cell_s(1, 2) is None
    assert est.memory_bytes == E.memory_bytes(GPT_STD, "32-true")


def test_earlier_results_win_over_the_flop_estimate_and_name_their_directory():
    # wall 43 s: 19 s of steps, the phase split's 6 steps (18 s), 6 s fixed
    measured = E.measured_from_times((2.0, 4.0), (10.0, 3.0), 43.0, 123_456, "from results runs/a")
    assert measured is not None
    assert measured.step_s == 3.0 and measured.first_step_s == 10.0 and measured.fixed_s == pytest.approx(6.0)
    est = E.estimate_cell(
        precision="32-true",
        mode="eager",
        world_size=1,
        ranks_sharing=1,
        facts=GPT_STD,
        calibration=CAL,
        peak_tflops=None,
        measured=measured,
    )
    assert est.time_source == "from results runs/a" and est.memory_source == "from results runs/a"
    assert est.memory_bytes == 123_456
    # fixed + first warm-up + 4 more warm-up + the lead-in + 50 measured steps + the phase split's steps
    assert est.cell_s(5, 50) == pytest.approx(6.0 + 10.0 + (54 + LEAD_IN_STEPS + E.PHASE_EXTRA_STEPS) * 3.0)


def test_a_record_without_measured_steps_is_no_estimate():
    assert E.measured_from_times((), (1.0,), 5.0, None, "x") is None


def test_compile_mode_adds_compilation_to_the_first_step_only():
    eager = E.estimate_cell(
        precision="32-true",
        mode="eager",
        world_size=1,
        ranks_sharing=1,
        facts=RESNET,
        calibration=CAL,
        peak_tflops=None,
    )
    comp = E.estimate_cell(
        precision="32-true",
        mode="compile",
        world_size=1,
        ranks_sharing=1,
        facts=RESNET,
        calibration=CAL,
        peak_tflops=None,
    )
    assert comp.step_s == eager.step_s
    assert comp.first_step_s == pytest.approx(eager.first_step_s + E.COMPILE_S_PER_OP * RESNET.ops)


def test_multi_process_cells_pay_the_interpreter_start():
    assert E.fixed_s(RESNET, 2) == pytest.approx(E.fixed_s(RESNET, 1) + E.MULTI_PROCESS_FIXED_S)


def test_memory_skip_reason_states_both_figures_and_stays_silent_when_either_is_unknown():
    reason = E.memory_skip_reason(30 * E.GIB, 11 * E.GIB + E.GIB // 2)
    assert reason is not None and "needs ~30.0 GiB per device, 11.5 GiB available" in reason
    assert E.memory_skip_reason(10 * E.GIB, 11 * E.GIB) is None
    assert E.memory_skip_reason(None, 1) is None and E.memory_skip_reason(1, None) is None


def test_a_cell_whose_estimate_fits_only_without_the_margin_for_error_is_skipped():
    # 2026-11-27: resnet standard on 2 CPU ranks, estimated 11.23 GiB a rank against 11.4 available,
    # peaked at 11.5 and was killed by the kernel's OOM killer.
    needed, available = int(11.23 * E.GIB), int(11.4 * E.GIB)
    reason = E.memory_skip_reason(needed, available)
    assert reason is not None
    assert (
        "needs ~11.2 GiB per device, 11.4 GiB available (memory estimate, 12.4 GiB with its 10% margin"
        in reason
    )
    assert E.memory_skip_reason(int(available / (1 + E.MEMORY_MARGIN)), available) is None


def test_memory_skip_reason_says_what_could_make_the_cell_fit():
    """A model too big for data-parallel training (every device a whole replica, as DDP keeps it) is not
    fixed by more DDP devices: the reason names the ways out, sharding over devices (FSDP) among them."""
    reason = E.memory_skip_reason(205 * E.GIB, 22 * E.GIB)
    assert reason is not None
    assert "every device holds the whole model" in reason and "DDP" in reason
    assert "--strategy fsdp" in reason and "more devices" in reason and "more memory" in reason


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("60m", 3600), ("1.5h", 5400), ("45", 45), (" 2M ", 120)]
)
def test_parse_duration(text, seconds):
    assert E.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "ten minutes", "-5m", "0s", "nanm", "infh", "5d"])
def test_parse_duration_refuses_with_the_fix(text):
    with pytest.raises(ValueError, match=r"60m|90s"):
        E.parse_duration(text)


def test_formatting():
    assert E.format_duration(None) == "?"
    assert E.format_duration(5) == "5.0 s" and E.format_duration(90) == "90 s"
    assert E.format_duration(600) == "10.0 min" and E.format_duration(13 * 3600) == "13.0 h"
    assert E.format_bytes(None) == "?" and E.format_bytes(E.GIB // 2) == "0.50 GiB"


def _est(step_s: float | None) -> E.Estimate:
    return E.Estimate(step_s, 1.0, 0.5, None, "test", "test")


def test_an_auto_cell_is_estimated_at_the_most_steps_its_rule_allows() -> None:
    from hpubench.plan.autosteps import LEAD_IN_STEPS, MAX_AUTO_STEPS, AutoSteps
    from hpubench.plan.cell import Cell

    rule = AutoSteps(target_ci=0.02, min_steps=10, min_time_s=0.5, max_time_s=3.0)
    auto = Cell("mlp", steps=None, auto_steps=rule)
    assert _est(0.01).steps_for(auto) == 300  # max-time / step time
    assert _est(1.0).steps_for(auto) == 10  # the minimum runs even past max-time
    assert _est(1e-6).steps_for(auto) == MAX_AUTO_STEPS  # the step cap
    assert _est(None).steps_for(auto) == 10
    # warm-up: 3 planned steps, 48 more to last min_time (0.5 s) after the first, the lead-in, 300 measured
    assert _est(0.01).cell_time_s(auto) == pytest.approx(
        0.5 + 1.0 + (3 - 1 + 48 + LEAD_IN_STEPS + 300 + E.PHASE_EXTRA_STEPS) * 0.01
    )
    fixed = Cell("mlp", steps=20)
    assert _est(0.01).steps_for(fixed) == 20
    assert _est(0.01).cell_time_s(fixed) == _est(0.01).cell_s(3, 20)


def test_fsdp_splits_what_each_device_holds_and_says_so_when_it_cannot_fit() -> None:
    ddp = E.memory_bytes(GPT_STD, "32-true", world_size=2)
    fsdp = E.memory_bytes(GPT_STD, "32-true", world_size=2, sharded=True)
    held = GPT_STD.params * 4 * 4  # adamw, fp32: parameters, gradients, two states
    # half of what is held goes to the other rank, and DDP's gradient buckets are not there
    assert ddp - fsdp == pytest.approx(held / 2 + GPT_STD.params * 4, rel=1e-6)
    assert E.memory_bytes(GPT_STD, "32-true", world_size=1, sharded=True) == E.memory_bytes(
        GPT_STD, "32-true", world_size=1
    )
    reason = E.memory_skip_reason(10 * 2**30, 2**30, sharded=True)
    assert reason is not None and "fsdp splits" in reason and "more devices" in reason


def test_convolution_flops_go_at_the_convolution_rate_and_the_source_says_so():
    convs = ModelFacts(
        params=RESNET.params,
        flops=RESNET.flops,
        ops=RESNET.ops,
        activation_bytes_fp32=RESNET.activation_bytes_fp32,
        batch_bytes_fp32=RESNET.batch_bytes_fp32,
        optimizer="sgd",
        conv_flops=3_000_000_000_000,
    )
    cal = Calibration(
        tflops={"fp32": 0.1, "fp16": 0.1},
        per_op_s=1e-5,
        source="calibrated here",
        conv_tflops={"fp32": 0.05, "fp16": 0.001},
    )
    step, source = E.step_time_s(convs, "32-true", cal, None)
    rest = convs.flops - convs.conv_flops
    expected = rest / (0.1e12 * E.MODEL_EFFICIENCY) + 3e12 / (0.05e12 * E.MODEL_EFFICIENCY) + convs.ops * 1e-5
    assert step == pytest.approx(expected)
    assert "convolutions 50.0 GFLOP/s" in source
    # A dtype whose convolutions are slow (fp16 backward on a CPU) is estimated slow, not at the matmul rate.
    slow, _ = E.step_time_s(convs, "16-mixed", cal, None)
    assert slow > 40 * step
    # Without a convolution rate every FLOP goes at the linear rate, as before.
    flat, flat_source = E.step_time_s(convs, "32-true", CAL, None)
    assert flat == pytest.approx(convs.flops / (0.1e12 * E.MODEL_EFFICIENCY) + convs.ops * 1e-5)
    assert "convolutions" not in flat_source


@pytest.mark.parametrize(
    ("tflops", "shown"),
    [(0.0123, "12.3 GFLOP/s"), (0.198, "198 GFLOP/s"), (1.2345, "1234 GFLOP/s"), (12.5, "12500 GFLOP/s")],
)
def test_a_calibrated_rate_never_prints_in_exponent_form(tflops: float, shown: str) -> None:
    assert E.gflops(tflops) == shown
    cal = Calibration(tflops={"bf16": tflops}, per_op_s=0.0, source="calibrated here")
    _, source = E.step_time_s(RESNET, "bf16-mixed", cal, None)
    assert f"bf16 {shown}" in source and "e+" not in source


def test_on_a_host_each_rank_gets_the_per_thread_rate_times_its_threads():
    # cores-1 on 2 cores: a one-rank cell runs 1 thread, and so does each rank of a two-rank cell.
    host = Calibration(tflops={"fp32": 0.1}, per_op_s=0.0, source="per thread", rank_threads=(1.0, 1.0))
    one, _ = E.step_time_s(RESNET, "32-true", host, None, ranks_sharing=1)
    two, _ = E.step_time_s(RESNET, "32-true", host, None, ranks_sharing=2)
    assert one == pytest.approx(RESNET.flops / (0.1e12 * E.MODEL_EFFICIENCY))
    assert two == pytest.approx(one)  # each rank has its own core: no slower per rank
    four_threads = Calibration(tflops={"fp32": 0.1}, per_op_s=0.0, source="x", rank_threads=(4.0, 2.0))
    assert E.step_time_s(RESNET, "32-true", four_threads, None)[0] == pytest.approx(one / 4)
    assert E.step_time_s(RESNET, "32-true", four_threads, None, ranks_sharing=2)[0] == pytest.approx(one / 2)
