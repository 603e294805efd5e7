"""What ``hpubench doctor`` checks on NVIDIA GPUs: every GPU's name and free memory, nccl and NVML.

``CUDAAccelerator.doctor_facts`` / ``doctor_findings`` call here; kept apart from ``cuda.py`` so the hook
surface stays one short class. The facts are read in doctor's throw-away child, which may initialise
CUDA; torch and pynvml are imported only there (the accelerator modules stay torch-free at import).
"""

from __future__ import annotations

from dataclasses import replace

from hpubench.accelerators.base import Accelerator, detected_facts
from hpubench.measure.doctor import DeviceFacts, Finding, device_findings

NVML_LIB = "NVML (pynvml)"
LIBRARY_FIXES = {
    "nccl": "install a torch build with nccl: multi-GPU cells need it",
    NVML_LIB: "pip install nvidia-ml-py (and check the NVIDIA driver): without NVML no power or "
    "energy is recorded",
}


def nvml_library() -> tuple[str | None, tuple[str, ...]]:
    """Why NVML does not load (None: it does) and the optional packages found missing."""
    try:
        import pynvml  # deferred: optional (hpubench[nvml]); its absence is a fact the doctor reports

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return None, ()
    except ImportError as exc:  # optional (hpubench[nvml]): telemetry is then absent
        return f"{type(exc).__name__}: {exc}", (NVML_LIB,)
    except Exception as exc:  # NVMLError: installed, but the driver's library does not answer
        return f"{type(exc).__name__}: {exc}", ()


def collect_facts(acc_cls: type[Accelerator]) -> DeviceFacts:
    """Every GPU's name and free memory, and whether nccl and NVML load (``acc_cls``: the CUDA
    accelerator; in doctor's child: this initialises CUDA, which the throw-away process may do)."""
    import torch  # deferred: accelerator modules stay torch-free at import (base.py)

    if not torch.cuda.is_available():
        return DeviceFacts(acc_cls.name, False, absent_reason="torch.cuda.is_available() is False")
    base = detected_facts(acc_cls)
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
    libraries[NVML_LIB], missing = nvml_library()
    return replace(
        base,
        names=tuple(names),
        memory=tuple(memory),
        unavailable=tuple(unavailable),
        libraries=libraries,
        optional_missing=missing,
    )


def findings(facts: DeviceFacts) -> list[Finding]:
    """The shared device checks, with the fix for each missing library."""
    return device_findings(facts, LIBRARY_FIXES)
