"""CPU accelerator: always present; memory is the worker process's resident set."""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import psutil

from hpubench.accelerators.base import Accelerator
from hpubench.accelerators.registry import register
from hpubench.measure.conditions import plan_threads, refuse_bad_policy, thread_policy
from hpubench.measure.memory import MemoryStats
from hpubench.measure.telemetry.base import TelemetrySource
from hpubench.measure.telemetry.rapl import RAPLSource
from hpubench.plan.cell import Cell
from hpubench.plan.dimensions import PLAIN

if TYPE_CHECKING:
    import torch


def _proc_status_kib(field_name: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def validate_threads_env(environ: Mapping[str, str] | None = None) -> None:
    """Refuse a bad ``HPUBENCH_CPU_THREADS`` before any worker starts (one line, exit 2 from the CLI)."""
    refuse_bad_policy(thread_policy, os.environ if environ is None else environ)


@register
class CPUAccelerator(Accelerator):
    name = "cpu"
    dist_backend = "gloo"
    autocast_device_type = "cpu"
    auto_priority = 0

    @classmethod
    def is_available(cls) -> bool:
        return True

    @classmethod
    def env_before_import(cls, cell: Cell) -> dict[str, str]:
        """``all-passive`` needs OMP_WAIT_POLICY before torch loads GNU OpenMP, which reads it only then.

        A user's own OMP_WAIT_POLICY stays; a bad policy name is left for the worker to report.
        """
        if cell.value("condition") == PLAIN:  # a plain script's process: OpenMP's own wait policy
            return {}
        try:
            policy = thread_policy(os.environ)
        except ValueError:
            return {}
        if policy == "all-passive" and not os.environ.get("OMP_WAIT_POLICY"):
            return {"OMP_WAIT_POLICY": "PASSIVE"}
        return {}

    @classmethod
    def device_count(cls) -> int:
        # One "device" per process: several CPU devices means several gloo ranks sharing the host.
        return max(
            1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        )

    def device_name(self) -> str:
        return cpu_model_name()

    def memory_available(self) -> tuple[int, bool] | None:
        return int(psutil.virtual_memory().available), True

    @classmethod
    def check_environment(cls, environ: Mapping[str, str]) -> None:
        validate_threads_env(environ)

    def telemetry_source(self) -> TelemetrySource:
        return RAPLSource()

    def torch_device(self) -> torch.device:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return torch.device("cpu")

    def synchronize(self) -> None:
        """CPU ops are synchronous: nothing to wait for."""

    def apply_threads(self, local_world_size: int, local_rank: int) -> str:
        """The thread policy ``HPUBENCH_CPU_THREADS`` names (see ``hpubench.measure.conditions``), applied
        here.

        The worker runs in a process made for the cell, so the threads and affinity set are not restored.
        """
        # deferred: the probe imports torch, and accelerator modules must stay torch-free at import.
        from hpubench.measure.conditions_probe import affinity, apply_plan

        policy = thread_policy(os.environ)  # ValueError naming the variable: the cell fails with it
        return apply_plan(plan_threads(policy, affinity(), local_world_size, local_rank, os.environ))

    def memory_stats(self) -> MemoryStats:
        rss = psutil.Process().memory_info().rss
        hwm_kib = _proc_status_kib("VmHWM")
        raw: dict[str, Any] = {"rss_bytes": rss}
        if hwm_kib is not None:
            raw["vm_hwm_bytes"] = hwm_kib * 1024
        return MemoryStats(
            source="process (RSS; peak = VmHWM since last reset)",
            peak_allocated_bytes=hwm_kib * 1024 if hwm_kib is not None else None,
            in_use_bytes=rss,
            limit_bytes=psutil.virtual_memory().total,
            raw=raw,
        )

    def reset_peak_memory_stats(self) -> None:
        # Linux resets the peak resident set (VmHWM) when "5" is written to clear_refs.
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass

    def grad_scaler(self) -> Any | None:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return torch.amp.GradScaler("cpu")

    def software_versions(self) -> dict[str, str]:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        return {"torch": torch.__version__, "mkldnn": str(torch.backends.mkldnn.is_available())}

    def env_flags(self) -> dict[str, str]:
        import torch  # deferred: accelerator modules stay torch-free at import (base.py)

        # glibc's allocator settings change the process's peak RSS, which is a CPU cell's peak memory: with
        # MALLOC_MMAP_THRESHOLD_=131072, fsdp's saving over ddp on gpt standard (2 ranks) read 1.01 GiB
        # against 0.43 GiB with the default dynamic threshold (freed blocks stay resident).
        flags = {
            k: v
            for k, v in os.environ.items()
            if k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "GLIBC_TUNABLES") or k.startswith("MALLOC_")
        }
        flags["torch_num_threads"] = str(torch.get_num_threads())
        return flags
