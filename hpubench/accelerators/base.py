"""The accelerator interface: everything device-specific lives behind it.

Two halves. The *rules* (``skip_reason``, ``env_before_import``: ``base_rules.AcceleratorRules``) are pure
class methods with no torch import, so matrix expansion can ask them on a machine without the device.
The *runtime* half (here) imports
torch lazily inside methods: importing an accelerator module must stay cheap and must never initialise a
device (a pre-warmed parent forks workers, and CUDA does not survive a fork once initialised).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hpubench.accelerators.base_rules import AcceleratorRules
from hpubench.errors import CellSkipped
from hpubench.measure.compilecount import CompileCounter, DynamoCounter
from hpubench.measure.conditions import plan_threads
from hpubench.measure.doctor import DeviceFacts, Finding, device_findings
from hpubench.measure.memory import MemoryStats
from hpubench.measure.telemetry.base import TelemetrySource, TelemetryUnavailable

if TYPE_CHECKING:
    import torch

    from hpubench.measure.clocks import StepClock

# A training step: takes one batch (a tuple of tensors on the device), returns the loss tensor.
StepFn = Callable[[tuple["torch.Tensor", ...]], "torch.Tensor"]

# Every accelerator object made in this process, for ``release_all`` before the process ends.
_MADE: list[Accelerator] = []


class Accelerator(AcceleratorRules, ABC):
    """Every device-specific hook: the rules (``AcceleratorRules``), detection, doctor and the runtime."""

    def __init__(self, index: int = 0) -> None:
        self.index = index
        _MADE.append(self)

    # ---- detection -------------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def is_available(cls) -> bool: ...

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why ``is_available`` said no when the framework is installed but refused to load."""
        return None

    @classmethod
    @abstractmethod
    def device_count(cls) -> int: ...

    @abstractmethod
    def device_name(self) -> str: ...

    # ---- doctor ----------------------------------------------------------------------------------
    @classmethod
    def doctor_facts(cls) -> DeviceFacts:
        """What ``hpubench doctor`` reports about this kind of device, read in doctor's child process
        (it imports the framework). Never raises: a broken framework is a fact too."""
        return detected_facts(cls)

    @classmethod
    def doctor_findings(cls, facts: DeviceFacts) -> list[Finding]:
        """Pure: this kind's findings from its ``doctor_facts`` (the shared checks unless overridden)."""
        return device_findings(facts)

    @classmethod
    def failure_reason(cls, exc: BaseException) -> str | None:
        """A failure in the device's own words (its OOM read as such); None keeps the exception's text."""
        return None

    def memory_available(self) -> tuple[int, bool] | None:
        """Bytes a cell may use on this device and whether its devices share them (CPU ranks share the
        host's RAM, so a cell's ranks divide it); None when unknown. Read at detection, for the
        estimator's "cannot fit" skips (``hpubench.plan.cost``)."""
        return None

    # ---- runtime ---------------------------------------------------------------------------------
    @abstractmethod
    def torch_device(self) -> torch.device: ...

    def generator_device(self) -> torch.device:
        """Where synthetic data is drawn with a seeded ``torch.Generator`` before it moves to the device."""
        return self.torch_device()

    def telemetry_id(self) -> int:
        """How this process's device is named to its telemetry source (:meth:`telemetry_source`)."""
        return self.index

    def telemetry_source(self) -> TelemetrySource:
        """Power/energy readings for this process's device; raises ``TelemetryUnavailable`` where none."""
        raise TelemetryUnavailable(f"no telemetry source for {self.name}")

    def setup(self) -> None:
        """Make ``self.index`` the current device of this process."""

    def apply_threads(self, local_world_size: int, local_rank: int) -> str:
        """Set this process's host (intra-op) threads for a cell of ``local_world_size`` ranks on this node.

        Returns the policy's name for ``runtime["threads"]["policy"]``. Here: torch's default for one
        rank, the cores divided among several (each taking all of them measures contention, not
        scaling); a user's OMP_NUM_THREADS wins. CPU cells choose among policies (``cpu.py``).
        """
        # deferred: the probe imports torch, and accelerator modules must stay torch-free at import.
        from hpubench.measure.conditions_probe import affinity, apply_plan

        return apply_plan(plan_threads("all", affinity(), local_world_size, local_rank, os.environ))

    def release(self) -> None:
        """Give the device back before this process ends (``release_all``, on every worker path).

        Workers end with ``os._exit`` (a device framework's interpreter-exit hooks have crashed
        finished cells), which also skips the framework's own exit-time cleanup; this hook runs the part
        that frees the device, so the next cell can acquire it. Called once per process, after the
        cell's result is written, whether the cell succeeded or not; a device never set up in this
        process must be left alone. Default: nothing to do (the host, CUDA).
        """

    @abstractmethod
    def synchronize(self) -> None: ...

    def step_clock(self, graphs: bool = False) -> StepClock:
        """How the measured steps are timed (``hpubench.measure.clocks``; ``graphs``: the next replay
        overwrites the loss). Default: host time around a sync per step, right for a synchronous device and
        for one whose lazy graphs run at the loss read (HPU); CUDA's events spare it the sync's cost."""
        from hpubench.measure.clocks import HostClock  # deferred: clocks imports torch (module docstring)

        return HostClock(self.synchronize)

    @abstractmethod
    def memory_stats(self) -> MemoryStats: ...

    @abstractmethod
    def reset_peak_memory_stats(self) -> None: ...

    def check_precision(self, precision: str) -> None:
        """Raise CellSkipped when the live device cannot run ``precision`` (a fact the rules can't see)."""

    def mode_in_force(self, requested: str) -> str:
        """The execution mode the device is really in, read back rather than assumed."""
        return requested

    def after_backward(self) -> None:
        """Hook after ``loss.backward()`` (HPU lazy mode: ``mark_step``)."""

    def after_optimizer_step(self) -> None:
        """Hook after ``optimizer.step()`` (HPU lazy mode: ``mark_step``)."""

    def has_step_hooks(self) -> bool:
        """Whether the two hooks above may do anything: true wherever a subclass overrides either.

        A step on a device without them leaves the calls out (``hpubench.run.trainstep``).
        """
        cls = type(self)
        return (
            cls.after_backward is not Accelerator.after_backward
            or cls.after_optimizer_step is not Accelerator.after_optimizer_step
        )

    def matmul_tf32(self) -> bool:
        """Whether fp32 matmuls run as TF32 here, which changes the peak MFU is measured against."""
        return False

    def conv_tf32(self) -> bool:
        """Whether fp32 convolutions run as TF32 here (a switch apart from matmuls' on CUDA)."""
        return False

    def compile_backend(self) -> str:
        return "inductor"

    def compile_options(self, graphs: bool) -> dict[str, Any]:
        """Keyword arguments for ``torch.compile`` in compile mode (graphs: capture inside compile)."""
        return {"backend": self.compile_backend()}

    def compile_counters(self) -> list[CompileCounter]:
        """Sources of compile events on this device, read around the measured steps (steady-state proof).

        torch.compile's counters on every device; subclasses add their graph captures and compilers.
        """
        return [DynamoCounter()]

    def graphed_step(
        self,
        make_step: Callable[[torch.nn.Module], StepFn],
        model: torch.nn.Module,
        sample_batch: tuple[torch.Tensor, ...],
    ) -> StepFn:
        """A training step with graph capture applied (HPU graphs / CUDA graphs)."""
        raise CellSkipped(f"graph capture is not available on {self.name}")

    def graph_module(self, model: torch.nn.Module) -> torch.nn.Module:
        """The bare model prepared for graph capture, before the strategy wraps it (HPU graphs)."""
        return model

    def prepare_fp8(self, model: torch.nn.Module) -> tuple[torch.nn.Module, Callable[[], Any]]:
        """Model converted for fp8 training and a factory of the fp8 autocast context."""
        raise CellSkipped(f"no supported fp8 training path on {self.name}")

    def optimizer_capturable(self, graphs: bool) -> bool:
        """Whether the optimizer must keep its state capturable: a captured graph that holds the
        optimizer step needs it (CUDA graphs), a device whose graphs leave the step outside does not."""
        return False

    def before_process_group(self) -> None:
        """What must happen before ``init_process_group(self.dist_backend)`` (e.g. registering it)."""

    def process_group_device_ids(self) -> list[int] | None:
        """Devices to name to DDP and barrier explicitly (None: the backend needs none)."""
        return None

    def profiler_activities(self) -> tuple[list[Any], list[str]]:
        """torch.profiler activities for this device and notes on what cannot be traced."""
        from torch.profiler import ProfilerActivity  # deferred: torch-free at import (module docstring)

        return [ProfilerActivity.CPU], []

    def profiler_setting(self) -> tuple[str | None, str | None]:
        """The device profiler's configuration in force while profiling, and a note about it (or None)."""
        return None, None

    def grad_scaler(self) -> Any | None:
        """A gradient scaler for fp16 mixed precision, or None where the device does not need one."""
        return None

    def software_versions(self) -> dict[str, str]:
        return {}

    def env_flags(self) -> dict[str, str]:
        """Environment flags that change this device's behaviour, recorded with every result."""
        return {}


def detected_facts(acc_cls: type[Accelerator]) -> DeviceFacts:
    """The shared ``doctor_facts``: count, names and versions of ``acc_cls``'s devices; never raises."""
    try:
        count = acc_cls.device_count() if acc_cls.is_available() else 0
    except Exception as exc:
        return DeviceFacts(
            acc_cls.name, False, absent_reason=f"detection failed: {type(exc).__name__}: {exc}"
        )
    if count == 0:
        return DeviceFacts(acc_cls.name, False, absent_reason="not available")
    dev = acc_cls(0)
    try:
        versions = dev.software_versions()
    except Exception as exc:
        versions = {"error": f"{type(exc).__name__}: {exc}"}
    return DeviceFacts(acc_cls.name, True, count=count, names=(dev.device_name(),) * count, versions=versions)


def release_all() -> list[str]:
    """``release()`` every accelerator made in this process, last made first; never raises.

    Returns one line per failure, for the worker's log: the process is about to exit either way.
    """
    failures: list[str] = []
    while _MADE:
        acc = _MADE.pop()
        try:
            acc.release()
        except Exception as exc:  # a broken device must not keep the worker from exiting
            failures.append(f"releasing the {acc.name} device failed: {type(exc).__name__}: {exc}")
    return failures
