"""The parts the trainer callbacks share, driven directly: the step recorder's warm-up, pauses and sample
counts on the real CPU accelerator, the record it builds, and the pure translations of a trainer's settings
and of ``lightning:`` flags."""

from __future__ import annotations

import math
import sys
import time

import pytest
import torch

from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.stats import summary as stats
from hpubench.errors import UsageError
from hpubench.integrations import runrecord
from hpubench.integrations.recorder import StepRecorder, TrainerFacts, batch_samples
from hpubench.plan.modeldirs import lightning_source, split_model_dirs
from workloads import lightning as lightning_workloads
from workloads.lightning import as_loss, one_optimizer

FACTS = TrainerFacts(
    workload="lightning:Tiny",
    framework="test",
    trainer="test.Trainer",
    accelerator="cpu",
    device_index=0,
    devices=1,
    nodes=1,
    precision="32-true",
    mode="eager",
    strategy="single",
)


def _train(recorder: StepRecorder, steps: int, samples: int = 8, pause_at: int | None = None) -> None:
    model = torch.nn.Linear(4, 1)
    for i in range(steps):
        if i == pause_at:
            recorder.pause()
            time.sleep(0.05)  # validation: must not land in any step
        recorder.step_begin()
        loss = model(torch.randn(samples, 4)).pow(2).mean()
        loss.backward()
        recorder.step_end(loss, samples + (i % 2))


@pytest.mark.serial
def test_warm_up_then_every_step_measured_with_its_own_samples() -> None:
    rec = StepRecorder(FACTS, warmup_steps=2)
    _train(rec, 12, pause_at=6)
    steps = rec.close()
    assert len(steps.warmup_s) == 2 and len(steps.measured_s) == 10  # no step lost at the pause
    assert steps.samples == [8 + (i % 2) for i in range(2, 12)]
    assert max(steps.measured_s) < 0.05  # the pause's sleep is in no step
    assert "after the 2 planned steps" in steps.facts["warmup_stop"]
    assert "run_queue_detail" in steps.facts or "interference_error" in steps.facts
    record = runrecord.build_record(rec)
    assert record.status == "ok" and record.quality is not None
    m = record.metrics
    assert m is not None and m.samples_per_s == pytest.approx(sum(steps.samples) / sum(steps.measured_s))
    assert record.cell.size == "trainer" and record.cell.value("condition") == "plain"
    assert record.numerics == "unchecked"


def test_a_run_inside_its_warm_up_or_with_a_nan_loss_is_a_failed_record_saying_why() -> None:
    rec = StepRecorder(FACTS, warmup_steps=3)
    _train(rec, 4)
    record = runrecord.build_record(rec)
    assert record.status == "failed" and "train for more steps" in str(record.reason)

    rec = StepRecorder(FACTS, warmup_steps=1)
    rec.step_begin()
    rec.step_end(torch.tensor(1.0), 4)
    for _ in range(3):
        rec.step_begin()
        rec.step_end(torch.tensor(math.nan), 4)
    record = runrecord.build_record(rec)
    assert record.status == "failed" and record.numerics == "diverged" and "non-finite" in str(record.reason)


def test_repeated_trainings_into_one_directory_are_repetitions(tmp_path) -> None:
    for _ in range(2):
        rec = StepRecorder(FACTS, warmup_steps=1)
        _train(rec, 5)
        runrecord.write(tmp_path, runrecord.build_record(rec))
    from hpubench.store.rundir import ResultStore

    assert sorted(r.repeat for r in ResultStore(tmp_path).load()) == [0, 1]


def test_throughput_of_variable_steps_is_total_samples_over_total_time() -> None:
    times, samples = [1.0, 1.0, 0.5], [100.0, 100.0, 20.0]
    est = stats.throughput(times, samples)
    assert est.value == pytest.approx(220 / 2.5) and est.lo <= est.value <= est.hi
    assert stats.throughput(times, 10).value == pytest.approx(stats.throughput(times, [10] * 3).value)
    with pytest.raises(ValueError, match="one per step"):
        stats.throughput(times, [1.0, 2.0])
    m = build_metrics(
        warmup_s=[1.0],
        measured_s=times,
        loss_first=1.0,
        loss_last=1.0,
        samples_per_step=100,
        tokens_per_step=None,
        flops_per_step=None,
        world_size=1,
        peak=None,
        samples_each=[100, 100, 20],
    )
    assert m.samples_per_s == pytest.approx(88.0) and m.samples_per_step == 73


def test_batch_samples_reads_the_first_tensor_of_any_structure() -> None:
    assert batch_samples({"input_ids": torch.zeros(5, 3), "n": 2}) == 5
    assert batch_samples(([torch.zeros(7)], torch.zeros(2))) == 7
    assert batch_samples(("text",)) == 0


def test_lightning_flags_become_a_workload_name_and_a_source(tmp_path) -> None:
    (tmp_path / "m.py").write_text("")
    name, source = lightning_source(f"lightning:{tmp_path}/m.py:Lit")
    assert name == "lightning:Lit" and source == f"lightning:{tmp_path}/m.py:Lit"
    for bad in ("lightning:m.py", "lightning:m.txt:Lit", "lightning::Lit", f"lightning:{tmp_path}/m.py:1x"):
        with pytest.raises(UsageError, match=r"lightning:FILE\.py:CLASS"):
            lightning_source(bad)
    with pytest.raises(UsageError, match=r"'nope\.py' does not exist; give the file that defines X"):
        lightning_source("lightning:nope.py:X")
    (tmp_path / "n.py").write_text("")
    with pytest.raises(UsageError, match="rename one class"):
        split_model_dirs([f"lightning:{tmp_path}/m.py:Lit,lightning:{tmp_path}/n.py:Lit"])


def test_configure_optimizers_forms_give_the_one_optimizer() -> None:
    opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    for form in (opt, [opt], (opt,), {"optimizer": opt, "lr_scheduler": sched}, ([opt], [sched])):
        assert one_optimizer(form) is opt
    with pytest.raises(ValueError, match="2 optimizers"):
        one_optimizer([opt, opt])
    with pytest.raises(ValueError, match="not an optimizer"):
        one_optimizer(None)
    assert as_loss({"loss": torch.tensor(1.0)}).item() == 1.0
    with pytest.raises(TypeError, match="not a loss tensor"):
        as_loss(None)


def test_a_module_s_flops_per_batch_reach_the_record() -> None:
    facts = TrainerFacts(**{**FACTS.__dict__, "flops_per_step": 2_000_000})
    rec = StepRecorder(facts, warmup_steps=1)
    _train(rec, 6)
    m = runrecord.build_record(rec).metrics
    assert m is not None and m.flops_per_step == 2_000_000
    assert m.achieved_tflops == pytest.approx(
        2e6 * m.measured_steps / (m.step_time_mean_s * m.measured_steps) / 1e12
    )


def test_a_lightning_trainer_s_settings_in_hpubench_s_words() -> None:
    lightning = pytest.importorskip("hpubench.integrations.lightning", reason="Lightning is not installed")
    from types import SimpleNamespace

    class DDPStrategy:
        root_device = torch.device("cpu")

    trainer = SimpleNamespace(
        strategy=DDPStrategy(),
        accumulate_grad_batches=4,
        num_devices=2,
        num_nodes=1,
        precision="bf16-mixed",
        accelerator=object(),
    )
    module = SimpleNamespace(_compiler_ctx={"compiler": "dynamo"}, flops_per_batch=1000)
    facts = lightning.trainer_facts(trainer, module)
    assert (facts.precision, facts.mode, facts.strategy, facts.devices) == ("bf16-mixed", "compile", "ddp", 2)
    assert facts.flops_per_step == 4000 and facts.accumulate == 4  # a batch's FLOPs times the micro-batches
    assert facts.workload == "lightning:SimpleNamespace"
    assert lightning.precision_name("32") == "32-true" and lightning.precision_name("16") == "16-mixed"
    with pytest.raises(ValueError, match="64-true"):
        lightning.precision_name("64-true")


LOADER_COUNTING_MODULE = '''
import torch
import pytorch_lightning as pl

STARTED = []


class Loader:
    def __iter__(self):
        STARTED.append(1)  # a real loader starts its workers or opens its files here
        return iter([(torch.full((4, 3), float(i)), torch.randn(4, 1)) for i in range(3)])


class Counted(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return Loader()


class OnMeta(Counted):
    """Its batches come out on the meta device when built there: the module is built for real."""

    def train_dataloader(self):
        outer = self

        class MetaLoader(Loader):
            def __iter__(self):
                STARTED.append(1)
                dev = outer.layer.weight.device
                return iter([(torch.randn(4, 3, device=dev), torch.randn(4, 1, device=dev))] * 3)

        return MetaLoader()
'''


# Counted: its one batch read on the meta device serves. OnMeta: that read gives meta tensors, so the module
# is built for real and read once more.
@pytest.mark.parametrize(("cls", "reads"), [("Counted", 1), ("OnMeta", 2)])
def test_registering_a_lightning_module_reads_its_loader_once(tmp_path, cls: str, reads: int) -> None:
    pytest.importorskip("pytorch_lightning", reason="pytorch-lightning is not installed")
    path = tmp_path / "counted.py"
    path.write_text(LOADER_COUNTING_MODULE)
    wl = lightning_workloads.load(f"lightning:{path}:{cls}")
    started = sys.modules[wl.module_class.__module__].STARTED
    assert len(started) == reads, f"the loader was iterated {len(started)} times, not {reads}"
    assert wl.sizes["tiny"].batch_size == 4 and wl.from_loader
    assert all(not t.is_meta for t in wl.first_batch)


def test_a_lightning_cell_trains_on_its_loader_s_passes_in_order(tmp_path) -> None:
    """The batch read when a cell's process builds the module is the first it trains on: the loader starts
    once per pass, and the batches come in its order."""
    pytest.importorskip("pytorch_lightning", reason="pytorch-lightning is not installed")
    path = tmp_path / "counted.py"
    path.write_text(LOADER_COUNTING_MODULE)
    wl_class = lightning_workloads.load(f"lightning:{path}:Counted")
    started = sys.modules[wl_class.module_class.__module__].STARTED
    started.clear()
    wl = wl_class()
    gen = torch.Generator()
    gen.manual_seed(1)
    marks = [int(wl.make_batch("tiny", 4, torch.device("cpu"), gen)[0][0, 0]) for _ in range(7)]
    assert marks == [0, 1, 2, 0, 1, 2, 0]
    assert len(started) == 3, f"the loader was started {len(started)} times for 3 passes"
