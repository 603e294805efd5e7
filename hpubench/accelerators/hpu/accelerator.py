"""Intel Gaudi (HPU) accelerator, written against the Habana API contract in ``shared/hpu-api.md``.

The hook surface only; the bodies live in modules named for what they hold: ``hpu_rules`` (pure rules:
refusals, module choice, op lists), ``hpu_device`` (the bridge: detection, mode read-back, memory,
release, versions), ``hpu_graphs`` (HPU graphs and graph compilations), ``hpu_fp8`` (transformer_engine)
and ``hpu_doctor``. ``habana_frameworks`` is imported only when a hook is called, never at module level:
the bridge reads ``PT_HPU_LAZY_MODE`` once, when it is first imported, so importing it here would fix the
execution mode for the whole process before the worker has set the environment for its cell. The rules
half (``skip_reason``, ``env_before_import``, ``validate_op_list_env``) imports neither torch nor habana,
so matrix expansion and the CLI can ask them on any machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hpubench.accelerators.base import Accelerator, StepFn
from hpubench.accelerators.hpu import device as hpu_device
from hpubench.accelerators.hpu import doctor as hpu_doctor
from hpubench.accelerators.hpu import fp8 as hpu_fp8
from hpubench.accelerators.hpu import graphs as hpu_graphs
from hpubench.accelerators.hpu.rules import (
    ENV_FLAG_PREFIXES,
    FORK_SERVER_ENV,
    HABANA_PROFILE_ENV,
    LAZY_MODE_ENV,
    card_memory,
    cell_refusal,
    device_oom_reason,
    habana_profile_in_force,
    op_list_env,
    precision_refusal,
    rank_module_env,
    telemetry_module_id,
    usable_module_count,
    validate_op_list_env,
)
from hpubench.accelerators.registry import register
from hpubench.errors import CellSkipped
from hpubench.measure.compilecount import CompileCounter
from hpubench.measure.doctor import DeviceFacts, Finding
from hpubench.measure.memory import MemoryStats
from hpubench.measure.telemetry.base import TelemetrySource
from hpubench.measure.telemetry.hlml import HLMLSource
from hpubench.plan.cell import Cell

if TYPE_CHECKING:
    import torch


@register
class HPUAccelerator(Accelerator):
    name = "hpu"
    dist_backend = "hccl"
    autocast_device_type = "hpu"
    auto_priority = 20
    graph_capture_name = "HPU graphs"

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        self._session = hpu_device.DeviceSession()

    # ---- rules: pure, no torch -------------------------------------------------------------------
    @classmethod
    def skip_reason(cls, cell: Cell, device_name: str) -> str | None:
        """Combinations Gaudi cannot run (``hpu_rules.cell_refusal``); the base rules are not reused."""
        return cell_refusal(cell, device_name)

    @classmethod
    def env_before_import(cls, cell: Cell) -> dict[str, str]:
        """The bridge reads these once at import, so they decide the whole worker process.

        A single-process cell is rank 0 of one: its module (the one its device index names) is chosen
        here, as each rank's is in ``rank_env``.
        """
        env = {LAZY_MODE_ENV: "1" if cell.mode == "lazy" else "0"}
        env.update(op_list_env(os.environ))
        if cell.world_size == 1:
            env.update(cls.rank_env(cell, 0, os.environ))
        return env

    @classmethod
    def fork_server_env(cls) -> dict[str, str]:
        """``PT_HPU_AUTOLOAD=0``: the fork server's ``import torch`` must not load the bridge (C2, C3;
        why: ``hpu_rules.FORK_SERVER_ENV``)."""
        return dict(FORK_SERVER_ENV)

    @classmethod
    def rank_device_index(cls, cell: Cell, local_rank: int) -> int:
        """Each rank's process acquires one Gaudi module, chosen by ``HLS_MODULE_ID``: device 0 there."""
        return 0

    @classmethod
    def rank_env(cls, cell: Cell, local_rank: int, environ: Mapping[str, str]) -> dict[str, str]:
        """``HLS_MODULE_ID`` picks this rank's module (contract C4; ``hpu_rules.rank_module_env``)."""
        return rank_module_env(cell, local_rank, environ)

    @classmethod
    def check_environment(cls, environ: Mapping[str, str]) -> None:
        validate_op_list_env(environ)

    # ---- detection and doctor --------------------------------------------------------------------
    @classmethod
    def is_available(cls) -> bool:
        """Never raises. Importing the bridge fixes the execution mode for this process, so callers
        detect in a throw-away child (see ``hpubench.plan.inventory``)."""
        return hpu_device.is_available()

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return hpu_device.unavailable_reason()

    @classmethod
    def device_count(cls) -> int:
        """The modules this process's cells may use: the bridge counts every module on the host (C15,
        ``synDeviceGetCount``), so ``HABANA_VISIBLE_MODULES`` narrows it here."""
        return usable_module_count(hpu_device.device_count(), os.environ)

    @classmethod
    def doctor_facts(cls) -> DeviceFacts:
        """Versions, mode, autoload, modules, hccl, HLML, and whether a card can be acquired (C5)."""
        return hpu_doctor.collect_facts(cls)

    @classmethod
    def doctor_findings(cls, facts: DeviceFacts) -> list[Finding]:
        return hpu_doctor.findings(facts)

    @classmethod
    def failure_reason(cls, exc: BaseException) -> str | None:
        """The bridge's device out-of-memory errors hold no "out of memory" (C8): read them as such."""
        return device_oom_reason(str(exc))

    def device_name(self) -> str:
        return hpu_device.device_name()

    def memory_available(self) -> tuple[int, bool] | None:
        """The card's HBM for its generation, from the name (C8, C5: ``hpu_rules.card_memory``)."""
        return card_memory(self.name, self.device_name())

    # ---- runtime ---------------------------------------------------------------------------------
    def telemetry_source(self) -> TelemetrySource:
        return HLMLSource(self.telemetry_id())

    def telemetry_id(self) -> int:
        """This process's module id, which HLML telemetry looks up (C10: ``telemetry_module_id``)."""
        return telemetry_module_id(self.index, os.environ)

    def before_process_group(self) -> None:
        hpu_device.register_hccl()

    def profiler_activities(self) -> tuple[list[Any], list[str]]:
        return hpu_device.profiler_activities()

    def profiler_setting(self) -> tuple[str | None, str | None]:
        return habana_profile_in_force(os.environ.get(HABANA_PROFILE_ENV))

    def torch_device(self) -> torch.device:
        return hpu_device.torch_device(self.index)

    def generator_device(self) -> torch.device:
        """The host: torch refuses a Generator on HPU (contract C1); batches are drawn there and moved."""
        return hpu_device.host_device()

    def setup(self) -> None:
        """Select the device and read the mode once: the step hooks must not ask the bridge every step."""
        self._session.setup(self.index)

    def release(self) -> None:
        """Drain the device and run the bridge's exit-time cleanup, which ``os._exit`` would skip.

        Contract C5: a card stays held until its process exits or releases it, and how soon the card
        is free after ``os._exit`` is not confirmed; back-to-back multi-card cells need it free at once.
        Only for a device this object set up (``hpu_device.DeviceSession``).
        """
        self._session.release()

    def synchronize(self) -> None:
        hpu_device.synchronize()

    def memory_stats(self) -> MemoryStats:
        return hpu_device.memory_stats()

    def reset_peak_memory_stats(self) -> None:
        hpu_device.reset_peak_memory_stats()

    def check_precision(self, precision: str) -> None:
        """The matrix may have planned without knowing the generation; the live device name decides."""
        refused = (
            precision_refusal(precision, self.device_name()) if precision in ("fp8", "16-mixed") else None
        )
        if refused is not None:
            raise CellSkipped(refused)

    def mode_in_force(self, requested: str) -> str:
        """Read back from the bridge, never assumed (``hpu_device.mode_in_force``)."""
        return hpu_device.mode_in_force(requested)

    def after_backward(self) -> None:
        """Lazy mode only runs the accumulated graph at ``mark_step``: without it nothing executes."""
        self._session.mark_step_if_lazy()

    def after_optimizer_step(self) -> None:
        self._session.mark_step_if_lazy()

    def compile_backend(self) -> str:
        return "hpu_backend"

    def compile_counters(self) -> list[CompileCounter]:
        """Dynamo's counters (compile mode) and the bridge's graph compilations (every mode)."""
        return [*super().compile_counters(), hpu_graphs.graph_compilations()]

    def graphed_step(
        self,
        make_step: Callable[[torch.nn.Module], StepFn],
        model: torch.nn.Module,
        sample_batch: tuple[torch.Tensor, ...],
    ) -> StepFn:
        """The model already carries its ``ModuleCacher`` (``graph_module``, applied before the strategy
        wrapped it): the step is the plain one; ``sample_batch`` is not needed."""
        return make_step(model)

    def graph_module(self, model: torch.nn.Module) -> torch.nn.Module:
        """HPU graphs through ``ModuleCacher`` (``hpu_graphs.module_cacher``), on the bare model."""
        return hpu_graphs.module_cacher(model)

    def prepare_fp8(self, model: torch.nn.Module) -> tuple[torch.nn.Module, Callable[[], Any]]:
        """transformer_engine's ``Linear`` for aligned ``nn.Linear`` layers (``hpu_fp8``)."""
        return hpu_fp8.prepare_fp8(model, self.device_name())

    def grad_scaler(self) -> Any | None:
        """None: hpubench does not scale fp16 losses on HPU; the loss sanity check catches divergence."""
        return None

    def software_versions(self) -> dict[str, str]:
        return hpu_device.software_versions()

    def env_flags(self) -> dict[str, str]:
        """Every knob of the bridge and runtime, plus the mode actually in force (defaults moved across
        releases, so the environment alone does not say which mode ran)."""
        flags = {k: v for k, v in os.environ.items() if k.startswith(ENV_FLAG_PREFIXES)}
        try:
            flags["lazy_mode_in_force"] = str(self._session.is_lazy())
        except ImportError:
            flags["lazy_mode_in_force"] = "unknown"
        return flags
