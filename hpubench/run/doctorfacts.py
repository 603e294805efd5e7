"""``hpubench doctor``'s fact gathering, the I/O half (the rules are in ``hpubench.measure.doctor``).

``host_facts`` runs in the launcher process and imports no device framework: /sys, /proc, psutil and
the environment. ``child_facts`` runs in the detection child (``python -m hpubench.run.forkserver.server
--detect OUT
--doctor``) after ``import torch``, and asks each accelerator's ``doctor_facts`` hook, highest priority
first, so the HPU hook sees the process before anything but ``import torch`` could load its bridge.
"""

from __future__ import annotations

import glob
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import psutil

from hpubench import accelerators
from hpubench.measure import steadiness
from hpubench.measure.doctor import HOST_ENV_VARS, DeviceFacts, HostFacts
from hpubench.measure.heap_probe import glibc
from hpubench.measure.telemetry import readcost

GOVERNOR_GLOB = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
STEADY_SIZE = 128  # small enough to stay in cache: the block rates follow the CPU, not memory


def governors(pattern: str = GOVERNOR_GLOB) -> dict[str, int]:
    """scaling_governor -> how many CPUs use it; {} where cpufreq is absent (VMs, many containers)."""
    found: Counter[str] = Counter()
    for path in glob.glob(pattern):
        try:
            with open(path, encoding="utf-8") as f:
                value = f.read().strip()
        except OSError:
            continue
        if value:
            found[value] += 1
    return dict(found)


def host_facts(environ: Mapping[str, str] | None = None) -> HostFacts:
    env = os.environ if environ is None else environ
    cpus = (
        sorted(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else list(range(os.cpu_count() or 1))
    )
    vm = psutil.virtual_memory()
    return HostFacts(
        cpus=tuple(cpus),
        governors=governors(),
        memory_available=int(vm.available),
        memory_total=int(vm.total),
        environ={k: env[k] for k in HOST_ENV_VARS if k in env},
        allocator=f"glibc {found[1]}" if (found := glibc()) else None,
    )


def child_facts(until_quiet: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """torch's version and every accelerator's facts, as JSON-ready data. Never raises for a device: a
    hook that fails is recorded as that accelerator's error. ``until_quiet`` returns once nothing the
    launcher starts runs beside this child any more; the facts that are timings are taken after it."""
    # deferred: host_facts runs in the torch-free launcher (hpubench.api); the child has torch already
    import torch

    found: list[tuple[type[accelerators.Accelerator], DeviceFacts]] = []
    for name in accelerators.names():
        cls = accelerators.get(name)
        try:
            facts = cls.doctor_facts()
        except Exception as exc:  # a bug or a broken framework: say so, keep the other accelerators
            facts = DeviceFacts(name, False, error=f"{type(exc).__name__}: {exc}")
        found.append((cls, facts))
    until_quiet()
    # Telemetry after every hook has seen the process: opening a source may load a device library.
    devices = [
        replace(facts, telemetry=telemetry_probe(cls)).to_dict()
        if facts.present and not facts.error
        else facts.to_dict()
        for cls, facts in found
    ]
    return {"torch": str(torch.__version__), "devices": devices, "steadiness": host_steadiness(torch)}


def host_steadiness(torch: Any) -> dict[str, Any]:
    """The host's own speed in short blocks (``hpubench.measure.steadiness``) of a one-thread matrix
    multiply on the CPU, last, when nothing else of this child runs; never raises."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        a = torch.randn(STEADY_SIZE, STEADY_SIZE)
        started = time.time()
        rates = steadiness.block_rates(lambda: torch.mm(a, a))
    except Exception as exc:  # a broken torch build: say so, keep the other facts
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        torch.set_num_threads(threads)
    work = f"a one-thread {STEADY_SIZE}x{STEADY_SIZE} matrix multiply"
    return {"work": work, "block_s": steadiness.BLOCK_S, "rates": rates, "started_at": started}


def telemetry_probe(cls: type[accelerators.Accelerator]) -> dict[str, Any]:
    """What one reading of the first device's telemetry costs (``readcost.probe``); never raises."""
    try:
        acc = cls(0)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return readcost.probe(acc.telemetry_source)
