"""CUDA accelerator: torch.cuda, nccl, CUDA graphs for whole training steps."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hpubench.analysis.doctor import DeviceFacts, Finding, device_findings
from hpubench.core.accelerators.base import Accelerator, StepFn
from hpubench.core.accelerators.registry import register
from hpubench.core.memory import MemoryStats
from hpubench.errors import CellSkipped
from hpubench.measure.compilecount import CompileCounter, EventCounter
from hpubench.measure.telemetry.base import TelemetrySource
from hpubench.measure.telemetry.nvml import NVMLSource
from hpubench.plan.cell import Cell

if TYPE_CHECKING:
    import torch

_CAPTURE_WARMUP_STEPS = 3
NVML_LIB = "NVML (pynvml)"


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
        import torch

        return torch.cuda.is_available()

    @classmethod
    def device_count(cls) -> int:
        import torch

        return torch.cuda.device_count()

    def device_name(self) -> str:
        import torch

        return torch.cuda.get_device_name(self.index)

    @classmethod
    def doctor_facts(cls) -> DeviceFacts:
        """Every GPU's name and free memory, and whether nccl and NVML load (doctor's child: this
        initialises CUDA, which the throw-away process may do)."""
        import torch

        if not torch.cuda.is_available():
            return DeviceFacts(cls.name, False, absent_reason="torch.cuda.is_available() is False")
        base = super().doctor_facts()
        names, memory, unavailable = [], [], []
        for i in range(base.count):
            names.append(torch.cuda.get_device_name(i))
            try:
                free, total = torch.cuda.mem_get_info(i)
                memory.append((f"cuda:{i}", int(free), int(total)))
            except Exception as exc:  # a GPU in exclusive mode held by another process fails here
                unavailable.append((f"cuda:{i}", f"{type(exc).__name__}: {exc}"))
        libraries: dict[str, str | None] = {
            "nccl": None if torch.distributed.is_nccl_available() else "torch was built without nccl"
        }
        missing: tuple[str, ...] = ()
        try:
            import pynvml

            pynvml.nvmlInit()
            pynvml.nvmlShutdown()
            libraries[NVML_LIB] = None
        except ImportError as exc:  # optional (hpubench[nvml]): telemetry is then absent
            libraries[NVML_LIB], missing = f"{type(exc).__name__}: {exc}", (NVML_LIB,)
        except Exception as exc:  # NVMLError: installed, but the driver's library does not answer
            libraries[NVML_LIB] = f"{type(exc).__name__}: {exc}"
        return replace(
            base,
            names=tuple(names),
            memory=tuple(memory),
            unavailable=tuple(unavailable),
            libraries=libraries,
            optional_missing=missing,
        )

    @classmethod
    def doctor_findings(cls, facts: DeviceFacts) -> list[Finding]:
        return device_findings(
            facts,
            {
                "nccl": "install a torch build with nccl: multi-GPU cells need it",
                NVML_LIB: "pip install nvidia-ml-py (and check the NVIDIA driver): without NVML no power or "
                "energy is recorded",
            },
        )

    def memory_available(self) -> tuple[int, bool] | None:
        import torch

        return int(torch.cuda.get_device_properties(self.index).total_memory), False

    def telemetry_source(self) -> TelemetrySource:
        return NVMLSource(self.telemetry_id())

    def optimizer_capturable(self, graphs: bool) -> bool:
        return graphs  # the captured graph holds the optimizer step

    def process_group_device_ids(self) -> list[int] | None:
        return [self.index]  # nccl: one device per process, named so DDP and barrier never guess

    def profiler_activities(self) -> tuple[list[Any], list[str]]:
        from torch.profiler import ProfilerActivity  # deferred: runtime half

        return [ProfilerActivity.CPU, ProfilerActivity.CUDA], []

    def torch_device(self) -> torch.device:
        import torch

        return torch.device("cuda", self.index)

    def setup(self) -> None:
        import torch

        torch.cuda.set_device(self.index)

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self.index)

    def memory_stats(self) -> MemoryStats:
        import torch

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
        import torch

        torch.cuda.reset_peak_memory_stats(self.index)

    def grad_scaler(self) -> Any | None:
        import torch

        return torch.amp.GradScaler("cuda")

    def check_precision(self, precision: str) -> None:
        """bf16 needs compute capability 8.0+; only the live device can tell."""
        import torch

        if "bf16" in precision and not torch.cuda.is_bf16_supported():
            raise CellSkipped(f"{self.device_name()} does not support bfloat16")

    def matmul_tf32(self) -> bool:
        import torch

        return bool(torch.backends.cuda.matmul.allow_tf32)

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
        """Whole-step capture (forward, backward, optimizer step) replayed on static input buffers.

        Follows PyTorch's documented recipe: warm up on a side stream, capture once, then each step
        copies the new batch into the static inputs and replays. The optimizer must be capturable.
        """
        import torch

        step = make_step(model)
        static = tuple(t.clone() for t in sample_batch)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(_CAPTURE_WARMUP_STEPS):
                step(static)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = step(static)
        self._captures.add()

        def replay(batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
            for dst, src in zip(static, batch, strict=True):
                dst.copy_(src, non_blocking=True)
            graph.replay()
            return static_loss

        return replay

    def software_versions(self) -> dict[str, str]:
        import torch

        return {
            "torch": torch.__version__,
            "cuda": str(torch.version.cuda),
            "cudnn": str(torch.backends.cudnn.version()),
            "nccl": ".".join(map(str, torch.cuda.nccl.version())) if hasattr(torch.cuda, "nccl") else "",
        }

    def env_flags(self) -> dict[str, str]:
        import torch

        flags = {k: v for k, v in os.environ.items() if k.startswith(("CUDA_", "NCCL_", "PYTORCH_CUDA"))}
        flags["allow_tf32_matmul"] = str(torch.backends.cuda.matmul.allow_tf32)
        return flags
