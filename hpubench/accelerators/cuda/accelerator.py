"""CUDA accelerator: torch.cuda, nccl, CUDA graphs for whole training steps.

The hook surface; the doctor's checks are in ``cuda_doctor`` and the graph capture in ``cuda_graphs``.
torch is imported inside each hook, never at module level: the accelerator modules stay torch-free at
import (``base.py``), and CUDA must not be initialised before a pre-warmed parent forks its workers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hpubench.accelerators.base import Accelerator, StepFn
from hpubench.accelerators.cuda import doctor as cuda_doctor
from hpubench.accelerators.cuda import graphs as cuda_graphs
from hpubench.accelerators.registry import register
from hpubench.errors import CellSkipped
from hpubench.measure.compilecount import CompileCounter, EventCounter
from hpubench.measure.doctor import DeviceFacts, Finding
from hpubench.measure.memory import MemoryStats
from hpubench.measure.telemetry.base import TelemetrySource
from hpubench.measure.telemetry.nvml import NVMLSource
from hpubench.plan.cell import Cell

if TYPE_CHECKING:
    import torch

    from hpubench.measure.clocks import StepClock


@register
class CUDAAccelerator(Accelerator):
    name = "cuda"
    dist_backend = "nccl"
    autocast_device_type = "cuda"
    auto_priority = 10
    pin_host_batches = True
    graph_capture_name = "CUDA graphs"

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        self._captures = EventCounter(
            "CUDA graph captures by hpubench (torch.cuda.graph)", "cuda_graph_captures"
        )

    @classmethod
    def skip_reason(cls, cell: Cell, device_name: str) -> str | None:
        base = super().skip_reason(cell, device_name)
        if base:
            return base
        if cell.graphs and cell.precision == "16-mixed":
            return "CUDA graphs cannot capture the fp16 grad scaler (it syncs with the host); use bf16-mixed"
        return None

    @classmethod
    def is_available(cls) -> bool:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return torch.cuda.is_available()

    @classmethod
    def device_count(cls) -> int:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return torch.cuda.device_count()

    def device_name(self) -> str:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return torch.cuda.get_device_name(self.index)

    @classmethod
    def doctor_facts(cls) -> DeviceFacts:
        """Every GPU's name and free memory, and whether nccl and NVML load (``cuda_doctor``)."""
        return cuda_doctor.collect_facts(cls)

    @classmethod
    def doctor_findings(cls, facts: DeviceFacts) -> list[Finding]:
        return cuda_doctor.findings(facts)

    def memory_available(self) -> tuple[int, bool] | None:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return int(torch.cuda.get_device_properties(self.index).total_memory), False

    def telemetry_source(self) -> TelemetrySource:
        return NVMLSource(self.telemetry_id())

    def optimizer_capturable(self, graphs: bool) -> bool:
        return graphs  # the captured graph holds the optimizer step

    def process_group_device_ids(self) -> list[int] | None:
        return [self.index]  # nccl: one device per process, named so DDP and barrier never guess

    def profiler_activities(self) -> tuple[list[Any], list[str]]:
        from torch.profiler import ProfilerActivity  # deferred: torch-free at import (base.py)

        return [ProfilerActivity.CPU, ProfilerActivity.CUDA], []

    def torch_device(self) -> torch.device:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return torch.device("cuda", self.index)

    def setup(self) -> None:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        torch.cuda.set_device(self.index)

    def synchronize(self) -> None:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        torch.cuda.synchronize(self.index)

    def step_clock(self, graphs: bool = False) -> StepClock:
        """Timing events on the current stream, or host timestamps for a step the warm-up finds launch-bound,
        no sync between steps (``hpubench.measure.clocks``): a sync and a loss read per step keep the host
        from queueing ahead, which a launch-bound step pays for."""
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        from hpubench.measure.clocks import EventClock  # deferred: clocks imports torch

        return EventClock(
            lambda: torch.cuda.Event(enable_timing=True), self.synchronize, pin=True, copy_loss=graphs
        )

    def memory_stats(self) -> MemoryStats:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        raw = torch.cuda.memory_stats(self.index)
        _free, total = torch.cuda.mem_get_info(self.index)
        return MemoryStats(
            source="torch.cuda.memory_stats",
            peak_allocated_bytes=raw.get("allocated_bytes.all.peak"),
            in_use_bytes=raw.get("allocated_bytes.all.current"),
            limit_bytes=total,
            num_allocs=raw.get("allocation.all.allocated"),
            num_frees=raw.get("allocation.all.freed"),
            raw=dict(raw),
        )

    def reset_peak_memory_stats(self) -> None:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        torch.cuda.reset_peak_memory_stats(self.index)

    def grad_scaler(self) -> Any | None:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return torch.amp.GradScaler("cuda")

    def check_precision(self, precision: str) -> None:
        """bf16 needs compute capability 8.0+; only the live device can tell."""
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        if "bf16" in precision and not torch.cuda.is_bf16_supported():
            raise CellSkipped(f"{self.device_name()} does not support bfloat16")

    def matmul_tf32(self) -> bool:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return bool(torch.backends.cuda.matmul.allow_tf32)

    def conv_tf32(self) -> bool:
        """cuDNN's own switch (torch's default: on), apart from matmuls': the H200 calibration read fp32
        convolutions at 259-261 TFLOP/s against 51 for fp32 matmuls (README, 2026-11-26)."""
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return bool(torch.backends.cudnn.enabled and torch.backends.cudnn.allow_tf32)

    def compile_options(self, graphs: bool) -> dict[str, Any]:
        # Inductor's "reduce-overhead" mode is its CUDA-graph mode: capture is done by the compiler.
        return {"backend": "inductor", "mode": "reduce-overhead"} if graphs else {"backend": "inductor"}

    def compile_counters(self) -> list[CompileCounter]:
        """Dynamo's counters (inductor's reduce-overhead captures follow its compiles) and our captures."""
        return [*super().compile_counters(), self._captures]

    def graphed_step(
        self,
        make_step: Callable[[torch.nn.Module], StepFn],
        model: torch.nn.Module,
        sample_batch: tuple[torch.Tensor, ...],
    ) -> StepFn:
        """Whole-step capture replayed on static input buffers (``cuda_graphs``)."""
        return cuda_graphs.captured_step(make_step, model, sample_batch, self._captures)

    def software_versions(self) -> dict[str, str]:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return {
            "torch": torch.__version__,
            "cuda": str(torch.version.cuda),
            "cudnn": str(torch.backends.cudnn.version()),
            "nccl": ".".join(map(str, torch.cuda.nccl.version())) if hasattr(torch.cuda, "nccl") else "",
        }

    def env_flags(self) -> dict[str, str]:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        flags = {k: v for k, v in os.environ.items() if k.startswith(("CUDA_", "NCCL_", "PYTORCH_CUDA"))}
        flags["allow_tf32_matmul"] = str(torch.backends.cuda.matmul.allow_tf32)
        # cuDNN's own switch (default on): 32-true convolutions may run on TF32 tensor cores even where
        # matmuls do not, which bounds what an fp32 peak means for a convolutional model.
        flags["allow_tf32_cudnn"] = str(torch.backends.cudnn.allow_tf32)
        return flags
