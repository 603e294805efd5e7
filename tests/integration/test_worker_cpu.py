"""Every precision and mode through the real worker on CPU: real training steps, real measurements."""

import math

import pytest

import workloads
from hpubench.accelerators.cpu import CPUAccelerator
from hpubench.analysis.quality import OK, VERDICTS, assess_record
from hpubench.plan.autosteps import LEAD_IN_STEPS
from hpubench.plan.cell import Cell, flops_key
from hpubench.run.worker import run_cell
from workloads.flops import count_step_flops


def _ok(cell: Cell):
    r = run_cell(cell)
    assert r.status == "ok", (r.reason, r.traceback_tail)
    return r


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed", "16-mixed", "bf16-true"])
def test_each_precision_trains_on_cpu(precision):
    r = _ok(Cell("mlp", precision=precision, steps=5, warmup_steps=2))
    m = r.metrics
    assert len(r.step_times_s) == 5 and len(r.warmup_times_s) == 2 + LEAD_IN_STEPS  # and the lead-in
    assert m.measured_steps == 5 and m.warmup_steps == 2 + LEAD_IN_STEPS
    assert math.isfinite(m.loss_first) and math.isfinite(m.loss_last)
    assert m.samples_per_s_ci[0] <= m.samples_per_s <= m.samples_per_s_ci[1]
    # throughput is the ratio of totals over the measured steps only
    assert m.samples_per_s == pytest.approx(m.samples_per_step * 5 / sum(r.step_times_s))
    assert r.runtime["precision"]["params"] == ("bfloat16" if precision == "bf16-true" else "float32")
    assert r.runtime["mode_in_force"] == "eager"


def test_fp16_mixed_uses_a_grad_scaler_on_cpu():
    r = _ok(Cell("mlp", precision="16-mixed", steps=3, warmup_steps=1))
    assert r.runtime["precision"] == {"params": "float32", "autocast": "float16", "grad_scaler": "on"}


def test_training_reduces_the_loss():
    r = _ok(Cell("mlp", steps=30, warmup_steps=2))
    assert r.metrics.loss_last < r.metrics.loss_first


def test_every_measured_record_carries_the_quality_verdict_of_its_own_steps_and_facts():
    r = _ok(Cell("mlp", steps=12, warmup_steps=2))
    expected = assess_record(r)
    assert expected is not None and expected.verdict in VERDICTS
    assert (r.quality, r.quality_reasons) == (expected.verdict, expected.reasons)
    assert (r.quality == OK) == (r.quality_reasons == ())


def test_flops_mfu_and_memory_are_recorded():
    r = _ok(Cell("gpt", steps=3, warmup_steps=1))
    m = r.metrics
    assert m.flops_per_step > 0 and m.tokens_per_step == m.samples_per_step * 64
    assert m.achieved_tflops == pytest.approx(m.flops_per_step * 3 / sum(r.step_times_s) / 1e12)
    assert m.tokens_per_s == pytest.approx(m.samples_per_s * 64)
    assert r.memory.source.startswith("process")
    assert r.memory.peak_allocated_bytes >= r.memory.in_use_bytes > 0


def test_compile_mode_runs_inductor_and_keeps_compile_time_out_of_steady_state():
    r = _ok(Cell("mlp", mode="compile", steps=5, warmup_steps=2))
    assert r.runtime["compile"] == {"backend": "inductor"}
    assert r.runtime["mode_in_force"] == "compile"
    # the first step carries the compilation; it must not leak into the measured steps
    assert r.metrics.first_step_s > 10 * r.metrics.step_time_p50_s


@pytest.mark.parametrize(
    ("cell", "fragment"),
    [
        (Cell("mlp", mode="lazy"), "lazy mode exists only on HPU"),
        (Cell("mlp", graphs=True), "graph capture is not available on cpu"),
        (Cell("mlp", precision="fp8"), "fp8"),
        (Cell("mlp", accelerator="cuda"), "no cuda device"),
    ],
)
def test_cells_this_machine_cannot_run_are_skipped_with_a_reason(cell, fragment):
    r = run_cell(cell)
    assert r.status == "skipped"
    assert fragment in r.reason
    assert (r.quality, r.quality_reasons) == (None, ())


def test_a_workload_error_becomes_a_failed_record_with_traceback():
    r = run_cell(Cell("mlp", size="standard", batch_size=10**12))
    assert r.status == "failed"
    assert r.reason and "\n" not in r.reason
    assert "Traceback" in r.traceback_tail


def test_a_flop_count_handed_in_is_used_instead_of_counting_again():
    from hpubench.plan.cell import flops_key

    counted = _ok(Cell("gpt", steps=2, warmup_steps=1))
    assert counted.runtime["flops_counted"] == "here" and counted.runtime["flops_count_s"] > 0
    batch = counted.runtime["batch_size"]
    assert counted.runtime["flops_per_device_step"] == counted.metrics.flops_per_step
    # A deliberately different figure proves the hint, not a recount, reached the record.
    hinted = run_cell(
        Cell("gpt", precision="bf16-mixed", steps=2, warmup_steps=1),
        flops_hints={flops_key("gpt", "tiny", batch): 12345},
    )
    assert hinted.metrics.flops_per_step == 12345
    assert hinted.runtime["flops_counted"] == "by an earlier cell of this run"
    assert "flops_count_s" not in hinted.runtime
    # A hint for another batch size is not this cell's: it counts.
    elsewhere = {flops_key("gpt", "tiny", batch + 1): 1}
    other = run_cell(Cell("gpt", steps=2, warmup_steps=1), flops_hints=elsewhere)
    assert other.runtime["flops_counted"] == "here"
    assert other.metrics.flops_per_step == counted.metrics.flops_per_step


def test_where_convolutions_run_apart_the_worker_counts_their_share_itself(monkeypatch):
    # A device whose fp32 convolutions run in TF32 (CUDA's cuDNN switch), played by the CPU: the record
    # must carry the step's convolution share for the mixed peak, counted here even with a hint at hand.
    monkeypatch.setattr(CPUAccelerator, "conv_tf32", lambda self: True)
    cell = Cell("resnet", size="tiny", precision="32-true", steps=2, warmup_steps=1)
    hint = {flops_key("resnet", "tiny", workloads.get("resnet").sizes["tiny"].batch_size): 1}
    r = run_cell(cell, flops_hints=hint)
    assert r.status == "ok", r.reason
    expected = count_step_flops(workloads.get("resnet"), "tiny", r.runtime["batch_size"])
    assert r.runtime["flops_counted"] == "here"
    assert r.runtime["flops_per_device_step"] == expected.total
    assert r.runtime["flops_conv_share"] == pytest.approx(expected.conv_share) and expected.conv_share > 0.99
    # A device without that switch keeps no share, and an earlier cell's count serves.
    monkeypatch.setattr(CPUAccelerator, "conv_tf32", lambda self: False)
    plain = run_cell(cell, flops_hints=hint)
    assert "flops_conv_share" not in plain.runtime.to_dict()
    assert plain.runtime["flops_per_device_step"] == 1
