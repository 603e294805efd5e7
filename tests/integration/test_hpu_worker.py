"""The real worker's training step on the HPU path, through the habana_frameworks test double.

Each case runs in a fresh interpreter because the bridge reads PT_HPU_LAZY_MODE once, at import. The driver
wraps backward and the optimizer step so they land in the double's call log beside mark_step: the test
then reads the exact order of calls the worker made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hpudata import HPU_MEMORY_KEYS

FAKES = Path(__file__).resolve().parents[1] / "fakes"
SHAPES = Path(__file__).resolve().parents[1] / "plugins" / "shapes.py"

DRIVER = textwrap.dedent(
    """
    import json, sys
    import torch
    from habana_frameworks._double import record
    from hpubench.plan.cell import Cell
    from hpubench.run.worker import run_cell

    backward = torch.Tensor.backward
    def logged_backward(self, *a, **k):
        backward(self, *a, **k)
        if self.device.type != "meta":  # FLOPs are counted on meta before training starts
            record("backward")
    torch.Tensor.backward = logged_backward
    for cls in (torch.optim.AdamW, torch.optim.SGD):
        step = cls.step
        def logged_step(self, *a, _step=step, **k):
            out = _step(self, *a, **k)
            record("optimizer.step")
            return out
        cls.step = logged_step
    if len(sys.argv) > 2:  # a --workloads-from file
        import runpy
        runpy.run_path(sys.argv[2])
    cell = Cell.from_dict(json.loads(sys.argv[1]))
    print(json.dumps(run_cell(cell).to_dict()))
    """
)


def run_on_double(
    tmp_path: Path, cell: dict, lazy: str | None, name: str = "GAUDI2", plugin: Path | None = None
) -> tuple[dict, list[str]]:
    log = tmp_path / "calls.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT_HPU", "HPUBENCH_FAKE"))}
    env.update(PYTHONPATH=str(FAKES), HPUBENCH_FAKE_HPU_CALL_LOG=str(log), HPUBENCH_FAKE_HPU_NAME=name)
    if lazy is not None:
        env["PT_HPU_LAZY_MODE"] = lazy
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(cell), *([str(plugin)] if plugin else [])],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    names = [line.split("\t")[0] for line in log.read_text().splitlines()] if log.exists() else []
    # the double logs "core.mark_step", "hpu.ModuleCacher", ...: keep the API name
    calls = [n if n == "optimizer.step" else n.rsplit(".", 1)[-1] for n in names]
    return record, calls


BASE = {"workload": "mlp", "accelerator": "hpu", "warmup_steps": 2, "steps": 3}


def _training_calls(calls: list[str]) -> list[str]:
    return [c for c in calls if c in ("backward", "mark_step", "optimizer.step")]


def test_lazy_mode_marks_a_step_after_backward_and_after_the_optimizer(tmp_path):
    rec, calls = run_on_double(tmp_path, {**BASE, "mode": "lazy"}, lazy="1")
    assert rec["status"] == "ok", rec
    assert rec["runtime"]["mode_in_force"] == "lazy"
    assert rec["runtime"]["device_name"] == "GAUDI2"
    assert "test double" in rec["runtime"]["software"]["habana_frameworks"]
    # The cell's 5 steps, then the passes after its figures (the numerics reference, the phase split), each
    # step of all of them marked after backward and after the optimizer.
    training = _training_calls(calls)
    steps = len(training) // 4
    assert steps >= 5 and training == ["backward", "mark_step", "optimizer.step", "mark_step"] * steps
    assert set(rec["memory"]["raw"]) == HPU_MEMORY_KEYS
    assert rec["memory"]["source"] == "hpu.memory_stats"


def test_eager_mode_never_marks_steps(tmp_path):
    rec, calls = run_on_double(tmp_path, {**BASE, "mode": "eager"}, lazy="0")
    assert rec["status"] == "ok", rec
    assert rec["runtime"]["mode_in_force"] == "eager"
    training = _training_calls(calls)  # the cell's 5 steps and the passes after them: none marked
    assert len(training) >= 10 and training == ["backward", "optimizer.step"] * (len(training) // 2)


def test_a_mode_the_bridge_does_not_run_fails_loudly_instead_of_mislabelling(tmp_path):
    # lazy requested, but the process was started eager: the figures would be eager figures
    rec, _ = run_on_double(tmp_path, {**BASE, "mode": "lazy"}, lazy="0")
    assert rec["status"] == "failed"
    assert "requested mode 'lazy' but the device runs 'eager'" in rec["reason"]


def test_hpu_graphs_wrap_the_model_with_module_cacher_in_lazy_mode(tmp_path):
    rec, calls = run_on_double(tmp_path, {**BASE, "mode": "lazy", "graphs": True}, lazy="1")
    assert rec["status"] == "ok", rec
    assert rec["runtime"]["graphs"] == "HPU graphs"
    assert calls.count("ModuleCacher") == 1
    assert calls.index("ModuleCacher") < calls.index("backward")


def test_compile_uses_the_hpu_backend_in_eager_mode(tmp_path):
    rec, _ = run_on_double(tmp_path, {**BASE, "mode": "compile"}, lazy="0")
    assert rec["status"] == "ok", rec
    assert rec["runtime"]["compile"] == {"backend": "hpu_backend"}
    assert rec["runtime"]["mode_in_force"] == "compile"


@pytest.mark.parametrize(("name", "status"), [("GAUDI2", "ok"), ("GAUDI", "skipped")])
def test_fp8_runs_through_transformer_engine_on_gaudi2_only(tmp_path, name, status):
    rec, calls = run_on_double(tmp_path, {**BASE, "mode": "lazy", "precision": "fp8"}, lazy="1", name=name)
    assert rec["status"] == status, rec
    if status == "ok":
        assert rec["runtime"]["precision"]["fp8"] == "transformer_engine"
        assert "fp8_autocast" in calls
    else:
        assert "first-gen" in rec["reason"].lower() or "gaudi2" in rec["reason"].lower()


# ---- steady state: the bridge's graph compilations around the measured steps ------------------------------
@pytest.mark.parametrize(
    ("workload", "mode", "lazy", "graphs"),
    [
        ("shapeshift", "lazy", "1", False),
        ("shapeshift", "lazy", "1", True),
        ("shapeshift", "compile", "0", False),
    ],
)
def test_a_shape_change_in_the_measured_steps_is_a_bridge_compilation(tmp_path, workload, mode, lazy, graphs):
    cell = {
        "workload": workload,
        "accelerator": "hpu",
        "mode": mode,
        "graphs": graphs,
        "warmup_steps": 2,  # then the lead-in: the long 4th batch is the first measured step
        "steps": 4,
    }
    rec, _calls = run_on_double(tmp_path, cell, lazy=lazy, plugin=SHAPES)
    assert rec["status"] == "ok", rec
    runtime = rec["runtime"]
    assert 'metric_global("graph_compilation")' in runtime["compile_counter"]
    assert runtime["compile_detail"]["hpu_graph_compilations"] >= 1
    assert runtime["compiles_measured"] >= 1
    assert "compile_counter_errors" not in runtime


@pytest.mark.parametrize(
    ("mode", "lazy", "graphs"), [("lazy", "1", False), ("lazy", "1", True), ("compile", "0", False)]
)
def test_a_fixed_shape_compiles_nothing_in_the_measured_steps(tmp_path, mode, lazy, graphs):
    cell = {
        "workload": "shapefixed",
        "accelerator": "hpu",
        "mode": mode,
        "graphs": graphs,
        "warmup_steps": 3,
        "steps": 4,
    }
    rec, calls = run_on_double(tmp_path, cell, lazy=lazy, plugin=SHAPES)
    assert rec["status"] == "ok", rec
    assert rec["runtime"]["compile_detail"] == {
        "dynamo_frames": 0,
        "dynamo_graphs": 0,
        "hpu_graph_compilations": 0,
    }
    assert rec["runtime"]["compiles_measured"] == 0
    assert "graph_compilation" in calls  # the warm-up compiled: the counter did see the graph path run
