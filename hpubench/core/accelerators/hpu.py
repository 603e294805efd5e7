"""Intel Gaudi (HPU) accelerator, written against the Habana API contract in ``shared/hpu-api.md``.

``habana_frameworks`` is imported only inside methods, never at module level: the bridge reads
``PT_HPU_LAZY_MODE`` once, when it is first imported, so importing it here would fix the execution mode
for the whole process before the worker has set the environment for its cell. The rules half
(``skip_reason``, ``env_before_import``, ``validate_op_list_env``) imports neither torch nor habana, so
matrix expansion and the CLI can ask them on any machine.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hpubench.analysis import peaks
from hpubench.analysis.doctor import DeviceFacts, Finding
from hpubench.core.accelerators import hpu_doctor
from hpubench.core.accelerators.base import Accelerator, StepFn
from hpubench.core.accelerators.hpu_rules import (
    ENV_FLAG_PREFIXES,
    HABANA_PROFILE_ENV,
    MODULE_ID_ENV,
    VISIBLE_MODULES_ENV,
    gaudi_generation,
    habana_profile_in_force,
    module_for,
    op_list_env,
    precision_refusal,
    validate_op_list_env,
    visible_modules,
)
from hpubench.core.accelerators.registry import register
from hpubench.core.memory import MemoryStats
from hpubench.errors import CellSkipped
from hpubench.measure.compilecount import CompileCounter, Unavailable
from hpubench.measure.telemetry.base import TelemetrySource
from hpubench.measure.telemetry.hlml import HLMLSource
from hpubench.plan.cell import Cell

if TYPE_CHECKING:
    import torch

BRIDGE_MODULE = "habana_frameworks.torch"
# The bridge's exit-time cleanup: what its atexit handler runs (read from the bridge's sources, not in
# hpu-api.md, so it may be missing: then only the synchronize runs).
BRIDGE_CLEANUP = ("habana_frameworks.torch._hpu_C", "cleanup")
LAZY_MODE_ENV = hpu_doctor.LAZY_MODE_ENV
AUTOLOAD_ENV = hpu_doctor.AUTOLOAD_ENV
# optimum-habana's setting for use_hpu_graphs_for_training; enough for one input shape per phase.
MODULE_CACHER_MAX_GRAPHS = 10
# The FP8 GEMMs want both matrix dimensions aligned to 16; other layers stay in higher precision.
FP8_ALIGNMENT = 16


class BridgeGraphCompilations(CompileCounter):
    """The bridge's own count of graph compilations: ``metric_global("graph_compilation")`` TotalNumber.

    Contract C7: a lazy-mode input shape change compiles a new graph and increments it; HPU graph
    captures and ``hpu_backend`` compiles go through the same graph compiler. The global metric counts
    from its creation (when the metrics module is imported), which ``__init__`` does, before the warm-up.
    """

    name = 'HPU bridge metric_global("graph_compilation") TotalNumber'

    def __init__(self) -> None:
        from habana_frameworks.torch.hpu.metrics import metric_global

        metric = metric_global("graph_compilation")
        if metric is None:
            raise RuntimeError('the bridge has no "graph_compilation" metric')
        self._metric = metric

    def snapshot(self) -> dict[str, int]:
        return {"hpu_graph_compilations": int(dict(self._metric.stats())["TotalNumber"])}


@register
class HPUAccelerator(Accelerator):
    name = "hpu"
    dist_backend = "hccl"
    autocast_device_type = "hpu"
    auto_priority = 20
    graph_capture_name = "HPU graphs"

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        self._lazy: bool | None = None
        self._set_up = False

    # ---- rules: pure, no torch -------------------------------------------------------------------
    @classmethod
    def skip_reason(cls, cell: Cell, device_name: str) -> str | None:
        """Combinations Gaudi cannot run; an unknown generation (``""``) is never refused on its grounds.

        The base rules are not reused: they refuse lazy mode and fp8, which exist precisely on HPU.
        Refusing on an unknown name would hide cells that may well run; the live device check
        (``check_precision``, ``graphed_step``) still catches them in the worker.
        """
        first_gen = gaudi_generation(device_name) == 1
        refused = precision_refusal(cell.precision, device_name)
        if refused is not None:
            return refused
        if cell.graphs:
            if cell.mode == "compile":
                return (
                    "HPU graphs cannot be combined with torch.compile: HPU graphs for training need lazy "
                    "mode, torch.compile needs eager mode (PT_HPU_LAZY_MODE=0)"
                )
            if cell.mode != "lazy":
                return (
                    f"HPU graphs for training (ModuleCacher) need lazy mode; mode {cell.mode} runs with "
                    "PT_HPU_LAZY_MODE=0, where the graph APIs do not exist"
                )
            if first_gen:
                return (
                    f"HPU graphs for training are disabled on first-generation Gaudi ({device_name}), "
                    "as in Habana's Model-References"
                )
        return None

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
        """``PT_HPU_AUTOLOAD=0``: the fork server's ``import torch`` must not load the bridge.

        From 1.19 ``import torch`` loads the bridge (contract C2), so without this every cell child
        (and the detection and probe children) would be forked from a process with the bridge loaded.
        C3: a child forked after the bridge initialised the device cannot use it, and whether a bridge
        that was only loaded survives a fork is not confirmed. With autoload off the bridge is first
        imported in the forked child (``torch_device``/``setup``/detection import it explicitly), so
        forking is safe under either reading and cells keep the fork server's start-up (a fresh
        interpreter per HPU cell, spawn isolation, would pay ``import torch`` and the bridge each
        time for no safety gained). Spawned workers and distributed ranks get the variable too and
        import the bridge the same way, after their ``env_before_import`` / ``rank_env`` variables
        are set. A user's ``PT_HPU_AUTOLOAD`` is overridden for hpubench's workers only.
        """
        return {AUTOLOAD_ENV: "0"}

    @classmethod
    def rank_device_index(cls, cell: Cell, local_rank: int) -> int:
        """Each rank's process acquires one Gaudi module, chosen by ``HLS_MODULE_ID``: device 0 there."""
        return 0

    @classmethod
    def rank_env(cls, cell: Cell, local_rank: int, environ: Mapping[str, str]) -> dict[str, str]:
        """``HLS_MODULE_ID`` picks this rank's module (contract C4).

        The cell's device indices count the visible modules: with a user's ``HABANA_VISIBLE_MODULES``
        (e.g. ``4,5,6,7``) index i is the i-th listed module, and their list stays as it is. Without one,
        index i is module i and the process is limited to the cell's modules.
        """
        indices = cell.device_ids if cell.device_ids else tuple(range(cell.devices))
        if visible_modules(environ):
            return {MODULE_ID_ENV: str(module_for(indices[local_rank], environ))}
        return {
            MODULE_ID_ENV: str(indices[local_rank]),
            VISIBLE_MODULES_ENV: ",".join(str(m) for m in indices),
        }

    # ---- detection -------------------------------------------------------------------------------
    @classmethod
    def is_available(cls) -> bool:
        """Never raises: a machine without the Habana software simply has no HPU.

        Importing the bridge fixes the execution mode for this process, so callers detect in a
        throw-away child (see ``hpubench.plan.inventory``).
        """
        try:
            from habana_frameworks.torch import hpu

            return bool(hpu.is_available())
        except Exception:
            return False

    @classmethod
    def device_count(cls) -> int:
        try:
            from habana_frameworks.torch import hpu
        except ImportError:
            return 0
        return int(hpu.device_count())

    @classmethod
    def doctor_facts(cls) -> DeviceFacts:
        """Versions, mode, autoload, modules, hccl, HLML, and whether a card can be acquired (C5)."""
        return hpu_doctor.collect_facts(cls)

    @classmethod
    def doctor_findings(cls, facts: DeviceFacts) -> list[Finding]:
        return hpu_doctor.findings(facts)

    def device_name(self) -> str:
        # The contract documents get_device_name() without arguments; all modules in a box are alike.
        from habana_frameworks.torch import hpu

        return str(hpu.get_device_name())

    def memory_available(self) -> tuple[int, bool] | None:
        """The card's HBM for its generation (C8: Gaudi 32 GiB, Gaudi2 96, Gaudi3 128), from the name.

        Read at detection, which must not acquire a card (C5: the detection child would hold it while the
        cells start); the usable ``memory_stats()["Limit"]`` is a little less, so only cells that could
        not fit the whole card are skipped up front. None for a name the peak table does not know.
        """
        entry = peaks.entry_for(self.name, self.device_name())
        if entry is None or entry.memory_gb is None:
            return None
        return int(entry.memory_gb * 1024**3), False

    # ---- runtime ---------------------------------------------------------------------------------
    @classmethod
    def check_environment(cls, environ: Mapping[str, str]) -> None:
        validate_op_list_env(environ)

    def telemetry_source(self) -> TelemetrySource:
        return HLMLSource(self.telemetry_id())

    def before_process_group(self) -> None:
        import habana_frameworks.torch.distributed.hccl  # noqa: F401  (registers "hccl", contract C11)

    def profiler_activities(self) -> tuple[list[Any], list[str]]:
        import habana_frameworks.torch.core  # noqa: F401  (the bridge adds ProfilerActivity.HPU)
        from torch.profiler import ProfilerActivity

        hpu = getattr(ProfilerActivity, "HPU", None)
        if hpu is None:
            note = "torch.profiler.ProfilerActivity has no HPU member: only host (CPU) activity traced"
            return [ProfilerActivity.CPU], [note]
        return [ProfilerActivity.CPU, hpu], []

    def profiler_setting(self) -> tuple[str | None, str | None]:
        return habana_profile_in_force(os.environ.get(HABANA_PROFILE_ENV))

    def torch_device(self) -> torch.device:
        import habana_frameworks.torch.core  # noqa: F401  (registers the "hpu" device type)
        import torch

        return torch.device("hpu", self.index)

    def generator_device(self) -> torch.device:
        """The host: torch refuses a Generator on HPU (contract C1); batches are drawn there and moved."""
        import torch

        return torch.device("cpu")

    def telemetry_id(self) -> int:
        """This process's module id, which HLML telemetry looks up (contract C10): the ``HLS_MODULE_ID``
        hpubench gave the process, else the first visible module, else the device index."""
        chosen = os.environ.get(MODULE_ID_ENV, "").strip()
        if chosen.isdigit():
            return int(chosen)
        visible = visible_modules(os.environ)
        return visible[0] if visible else self.index

    def setup(self) -> None:
        """Select the device and read the mode once: the step hooks must not ask the bridge every step."""
        import habana_frameworks.torch.core as htcore
        from habana_frameworks.torch import hpu

        self._lazy = bool(htcore.is_lazy())
        hpu.set_device(self.index)
        self._set_up = True

    def release(self) -> None:
        """Drain the device, then run the bridge's exit-time cleanup, which ``os._exit`` would skip.

        Contract C5: a card stays held until its process exits or releases it, and how soon the card
        is free after ``os._exit`` is not confirmed; back-to-back multi-card cells need it free at once.
        hpu-api.md documents no release call, so this is ``hpu.synchronize()`` (work still queued
        finishes) and ``habana_frameworks.torch._hpu_C.cleanup()``, which the bridge registers to run
        at interpreter exit, when the bridge has it. Only for a device this object set up: a process
        that never used the device must not acquire it just to give it back.
        """
        if not self._set_up or BRIDGE_MODULE not in sys.modules:
            return
        self._set_up = False
        from habana_frameworks.torch import hpu

        try:
            hpu.synchronize()
        finally:
            module, name = BRIDGE_CLEANUP
            cleanup = None
            with contextlib.suppress(ImportError):
                cleanup = getattr(importlib.import_module(module), name, None)
            if cleanup is not None:
                cleanup()

    def _is_lazy(self) -> bool:
        if self._lazy is None:
            import habana_frameworks.torch.core as htcore

            self._lazy = bool(htcore.is_lazy())
        return self._lazy

    def synchronize(self) -> None:
        from habana_frameworks.torch import hpu

        hpu.synchronize()

    def memory_stats(self) -> MemoryStats:
        from habana_frameworks.torch import hpu

        raw = dict(hpu.memory_stats())
        return MemoryStats(
            source="hpu.memory_stats",
            peak_allocated_bytes=raw.get("MaxInUse"),
            in_use_bytes=raw.get("InUse"),
            limit_bytes=raw.get("Limit"),
            num_allocs=raw.get("NumAllocs"),
            num_frees=raw.get("NumFrees"),
            raw=raw,
        )

    def reset_peak_memory_stats(self) -> None:
        from habana_frameworks.torch import hpu

        hpu.reset_peak_memory_stats()

    def check_precision(self, precision: str) -> None:
        """The matrix may have planned without knowing the generation; the live device name decides."""
        if precision not in ("fp8", "16-mixed"):
            return
        refused = precision_refusal(precision, self.device_name())
        if refused is not None:
            raise CellSkipped(refused)

    def mode_in_force(self, requested: str) -> str:
        """Read back from the bridge: an inherited PT_HPU_LAZY_MODE or a release default can override us.

        The bridge only knows lazy or not; "compile" is eager mode plus torch.compile, so it is reported
        as requested when the bridge is eager.
        """
        import habana_frameworks.torch.core as htcore

        if htcore.is_lazy():
            return "lazy"
        return "compile" if requested == "compile" else "eager"

    def after_backward(self) -> None:
        """Lazy mode only runs the accumulated graph at ``mark_step``: without it nothing executes."""
        if self._is_lazy():
            import habana_frameworks.torch.core as htcore

            htcore.mark_step()

    def after_optimizer_step(self) -> None:
        if self._is_lazy():
            import habana_frameworks.torch.core as htcore

            htcore.mark_step()

    def compile_backend(self) -> str:
        return "hpu_backend"

    def compile_counters(self) -> list[CompileCounter]:
        """Dynamo's counters (compile mode) and the bridge's graph compilations (every mode).

        A bridge without the metrics API leaves only dynamo's counters, and the record says why.
        """
        try:
            bridge: CompileCounter = BridgeGraphCompilations()
        except (ImportError, RuntimeError) as exc:
            bridge = Unavailable(BridgeGraphCompilations.name, f"not counted: {type(exc).__name__}: {exc}")
        return [*super().compile_counters(), bridge]

    def graphed_step(
        self,
        make_step: Callable[[torch.nn.Module], StepFn],
        model: torch.nn.Module,
        sample_batch: tuple[torch.Tensor, ...],
    ) -> StepFn:
        """HPU graphs the way optimum-habana trains with them: ``ModuleCacher`` wraps the model in place.

        Capture happens on the first training forward, i.e. during the worker's warm-up steps, so
        capture time never leaks into the timed steps. ``sample_batch`` is not needed: the cacher keys
        graphs on the shapes it sees.
        """
        from habana_frameworks.torch import hpu

        cacher_cls = getattr(hpu, "ModuleCacher", None)
        if cacher_cls is None:
            raise CellSkipped(
                "HPU graphs are not available: habana_frameworks.torch.hpu has no ModuleCacher "
                "(the graph APIs exist only in lazy mode, PT_HPU_LAZY_MODE=1)"
            )
        wrapped = cacher_cls(max_graphs=MODULE_CACHER_MAX_GRAPHS)(model=model, inplace=True)
        return make_step(wrapped if wrapped is not None else model)

    def prepare_fp8(self, model: torch.nn.Module) -> tuple[torch.nn.Module, Callable[[], Any]]:
        """Swap aligned ``nn.Linear`` layers for transformer_engine's, the only fp8 training path on HPU.

        Only modules whose type is exactly ``nn.Linear`` are swapped: subclasses (e.g. the output
        projection inside ``nn.MultiheadAttention``) are used through their weights by their parents,
        so a replacement there would silently not run in fp8.
        """
        refused = precision_refusal("fp8", self.device_name())
        if refused is not None:
            raise CellSkipped(refused)
        try:
            import habana_frameworks.torch.hpex.experimental.transformer_engine as te
        except ImportError as exc:
            raise CellSkipped(
                f"fp8 needs habana_frameworks' transformer_engine, which is missing ({exc})"
            ) from None

        replaced = _swap_linears(model, te.Linear)
        if replaced == 0:
            raise CellSkipped(
                f"no nn.Linear layer with in/out features that are multiples of {FP8_ALIGNMENT}: "
                "nothing would run in fp8"
            )
        recipe_mod = getattr(te, "recipe", None)
        delayed_scaling = getattr(recipe_mod, "DelayedScaling", None)
        fp8_recipe = delayed_scaling() if delayed_scaling is not None else None

        def fp8_context() -> Any:
            return te.fp8_autocast(enabled=True, fp8_recipe=fp8_recipe)

        return model, fp8_context

    def grad_scaler(self) -> Any | None:
        """None: hpubench does not scale fp16 losses on HPU; the loss sanity check catches divergence."""
        return None

    def software_versions(self) -> dict[str, str]:
        """Versions, with the test double marked so its figures can never pass as real HPU results."""
        import torch

        versions = {"torch": torch.__version__}
        try:
            import habana_frameworks
            import habana_frameworks.torch as ht
        except ImportError:
            versions["habana_frameworks"] = "not installed"
            return versions
        version = getattr(ht, "__version__", None)
        if version is None:
            from importlib import metadata

            try:
                version = metadata.version("habana-torch-plugin")
            except metadata.PackageNotFoundError:
                version = "unknown"
        if getattr(habana_frameworks, "__hpubench_test_double__", False):
            version = f"{version} (test double)"
        versions["habana_frameworks"] = str(version)
        return versions

    def env_flags(self) -> dict[str, str]:
        """Every knob of the bridge and runtime, plus the mode actually in force (defaults moved across
        releases, so the environment alone does not say which mode ran)."""
        flags = {k: v for k, v in os.environ.items() if k.startswith(ENV_FLAG_PREFIXES)}
        try:
            flags["lazy_mode_in_force"] = str(self._is_lazy())
        except ImportError:
            flags["lazy_mode_in_force"] = "unknown"
        return flags


def _swap_linears(module: torch.nn.Module, linear_cls: type[torch.nn.Module]) -> int:
    """Replace aligned plain ``nn.Linear`` children (recursively) with ``linear_cls``; returns the count."""
    import torch

    count = 0
    for child_name, child in list(module.named_children()):
        if (
            type(child) is torch.nn.Linear
            and child.in_features % FP8_ALIGNMENT == 0
            and child.out_features % FP8_ALIGNMENT == 0
        ):
            new = linear_cls(child.in_features, child.out_features, bias=child.bias is not None)
            new = new.to(device=child.weight.device, dtype=child.weight.dtype)
            with torch.no_grad():
                new.weight.copy_(child.weight)
                if child.bias is not None:
                    new.bias.copy_(child.bias)
            new.train(child.training)
            setattr(module, child_name, new)
            count += 1
        else:
            count += _swap_linears(child, linear_cls)
    return count
