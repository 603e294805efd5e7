"""The training step the core builds: the bare step where nothing is added, the general one elsewhere, and
both doing the same training."""

import pytest
import torch

import workloads
from hpubench.accelerators.cpu import CPUAccelerator
from hpubench.precision import apply as precision
from hpubench.run.trainstep import make_optimizer, step_factory
from workloads.base import Workload

SEED = 7


class HookedCPU(CPUAccelerator):
    """A CPU accelerator whose step hooks count their calls (as HPU lazy mode's mark_step runs)."""

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        self.calls: list[str] = []

    def after_backward(self) -> None:
        self.calls.append("after_backward")

    def after_optimizer_step(self) -> None:
        self.calls.append("after_optimizer_step")


class AutocastProbe:
    """Wraps a workload and records, per forward, whether CPU autocast was on inside the step."""

    def __init__(self, inner: Workload) -> None:
        self.inner = inner
        self.autocast: list[bool] = []

    def loss(self, model: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        self.autocast.append(torch.is_autocast_enabled("cpu"))
        return self.inner.loss(model, batch)


def _train(acc: CPUAccelerator, prec: str, steps: int = 3) -> tuple[list[float], AutocastProbe]:
    wl = workloads.get("mlp")
    torch.manual_seed(SEED)
    prepared = precision.prepare(prec, wl.build_model("tiny"), acc)
    gen = torch.Generator().manual_seed(SEED)
    batches = [wl.make_batch("tiny", 8, torch.device("cpu"), gen) for _ in range(steps)]
    probe = AutocastProbe(wl)
    opt = make_optimizer(wl, prepared.model, capturable=False)
    step = step_factory(probe, opt, prepared, acc)(prepared.model)  # type: ignore[arg-type]
    return [float(step(b)) for b in batches], probe


def test_the_bare_step_and_the_hooked_step_train_identically_and_hooks_run_where_a_device_has_them():
    bare_losses, _ = _train(CPUAccelerator(0), "32-true")
    hooked = HookedCPU(0)
    hooked_losses, _ = _train(hooked, "32-true")
    assert hooked.calls == ["after_backward", "after_optimizer_step"] * 3
    assert bare_losses == hooked_losses  # same seed, same batches: the same training, bit for bit
    assert bare_losses[-1] < bare_losses[0]


def test_a_precision_with_autocast_keeps_its_context_in_the_step():
    _, plain = _train(CPUAccelerator(0), "32-true")
    _, mixed = _train(CPUAccelerator(0), "bf16-mixed")
    assert plain.autocast == [False] * 3
    assert mixed.autocast == [True] * 3


def test_a_grad_scaler_still_scales_in_the_step():
    acc = CPUAccelerator(0)
    wl = workloads.get("mlp")
    prepared = precision.prepare("16-mixed", wl.build_model("tiny"), acc)
    assert prepared.scaler is not None and not prepared.plain
    scaled: list[torch.Tensor] = []
    real_scale = prepared.scaler.scale
    prepared.scaler.scale = lambda t: scaled.append(t) or real_scale(t)  # type: ignore[method-assign]
    opt = make_optimizer(wl, prepared.model, capturable=False)
    step = step_factory(wl, opt, prepared, acc)(prepared.model)
    gen = torch.Generator().manual_seed(SEED)
    step(wl.make_batch("tiny", 8, torch.device("cpu"), gen))
    assert len(scaled) == 1


@pytest.mark.parametrize(("prec", "plain"), [("32-true", True), ("bf16-true", True), ("bf16-mixed", False)])
def test_which_precisions_add_nothing_to_the_step(prec, plain):
    acc = CPUAccelerator(0)
    assert precision.prepare(prec, workloads.get("mlp").build_model("tiny"), acc).plain is plain
    assert not acc.has_step_hooks() and HookedCPU(0).has_step_hooks()


@pytest.mark.parametrize("acc_cls", [CPUAccelerator, HookedCPU])
def test_the_step_returns_the_loss_undetached_so_no_detach_runs_inside_the_timed_step(acc_cls):
    # A detach in the step is a dispatched op in every timed step (mlp tiny read ~0.9% slower with it, see
    # step_factory); measure_steps reads the loss with .item(), which needs none.
    wl = workloads.get("mlp")
    acc = acc_cls(0)
    prepared = precision.prepare("32-true", wl.build_model("tiny"), acc)
    opt = make_optimizer(wl, prepared.model, capturable=False)
    step = step_factory(wl, opt, prepared, acc)(prepared.model)
    loss = step(wl.make_batch("tiny", 8, torch.device("cpu"), torch.Generator().manual_seed(SEED)))
    assert loss.requires_grad and loss.grad_fn is not None
    assert isinstance(loss.item(), float)
