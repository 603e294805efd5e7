"""The double's device lifecycle (not part of the Habana API): load, initialise, fork, release.

Contract C3: a child forked after the bridge initialised the device cannot use the device. The double
records the pid that initialised the device; the same calls in any other process that inherited that
state (a forked child) raise ``RuntimeError``, as the Synapse runtime fails there.

What initialises: ``hpu.init()`` in the bridge, which its Python layer calls on first use of the device
(in the 1.19 sources ``get_device_name``, ``current_device`` and ``synchronize`` call it; device
selection, memory queries, events, graphs and running a lazy graph need it too). ``is_available`` and
``device_count`` do not: they ask the driver for a count and never raise. The calls are listed in
``INIT_CALLS``; every other call of the double (detection, ``is_lazy``, ``mark_step`` in eager mode,
where it is a no-op) neither initialises nor is refused.

C3 leaves open (*inferred*) whether a child forked from a process that only *loaded* the bridge (e.g. at
``import torch``, C2) may use the device. ``HPUBENCH_FAKE_HPU_FORK_AFTER_LOAD`` picks the reading:
``allow`` (default: loading without touching the device stays forkable) or ``refuse`` (such a child
fails like one forked after initialisation). Code must work under both.

Release (C5): ``habana_frameworks.torch._hpu_C.cleanup()`` is what the bridge runs at interpreter exit
(an ``atexit`` handler, which ``os._exit`` skips). Here it ends this process's hold on the device and
calls the callbacks given to ``on_release`` (card ownership hooks in there). The double registers it
with ``atexit`` when the bridge loads, as the bridge does.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable

FORK_AFTER_LOAD_ENV = "HPUBENCH_FAKE_HPU_FORK_AFTER_LOAD"
FORK_AFTER_LOAD_VALUES = ("allow", "refuse")

# Calls (as the double records them) that initialise the device, or need it initialised.
INIT_CALLS = frozenset(
    {
        "hpu._lazy_init",
        "hpu.get_device_name",
        "hpu.current_device",
        "hpu.set_device",
        "hpu.synchronize",
        "hpu.memory_stats",
        "hpu.memory_allocated",
        "hpu.max_memory_allocated",
        "hpu.reset_peak_memory_stats",
        "hpu.memory_reserved",
        "hpu.mem_get_info",
        "hpu.Event",
        "hpu.Event.record",
        "hpu.Event.synchronize",
        "hpu.HPUGraph.capture_begin",
        "dynamo.hpu_backend",
    }
)
LAZY_STEP_CALL = "core.mark_step"  # initialises only in lazy mode (detail "lazy"): eager is a no-op
LOAD_CALL = "core.import"

_loaded_pid: int | None = None  # the process that loaded (imported) the bridge
_init_pid: int | None = None  # the process that initialised the device, until it released it
_release_callbacks: list[Callable[[], None]] = []


def fork_after_load() -> str:
    raw = os.environ.get(FORK_AFTER_LOAD_ENV, "allow")
    if raw not in FORK_AFTER_LOAD_VALUES:
        raise ValueError(f"{FORK_AFTER_LOAD_ENV}={raw!r} must be one of {', '.join(FORK_AFTER_LOAD_VALUES)}")
    return raw


def on_call(name: str, detail: str) -> None:
    """Every recorded API call passes here (``_double.record``) before it does anything."""
    if name == LOAD_CALL:
        _loaded()
    elif name in INIT_CALLS or (name == LAZY_STEP_CALL and detail == "lazy"):
        touch(name)


def _loaded() -> None:
    global _loaded_pid
    _loaded_pid = os.getpid()
    # Deferred: a module-level import would be a cycle (the bridge module imports this one).
    from habana_frameworks.torch import _hpu_C

    atexit.register(_hpu_C.cleanup)


def touch(what: str) -> None:
    """``what`` needs the device: initialise it here, or refuse where C3 says the runtime fails."""
    global _init_pid
    pid = os.getpid()
    if _init_pid == pid:
        return
    if _init_pid is not None:
        raise RuntimeError(
            f"{what}: HPU device initialization failed in process {pid}: the Habana runtime was "
            f"initialised in process {_init_pid} before this process was forked from it, and a forked "
            "child cannot use the device (start workers with spawn, or fork before the device is "
            "initialised) [habana_frameworks test double, contract C3]"
        )
    if _loaded_pid is not None and _loaded_pid != pid and fork_after_load() == "refuse":
        raise RuntimeError(
            f"{what}: HPU device initialization failed in process {pid}: the Habana bridge was loaded "
            f"in process {_loaded_pid} before this process was forked from it "
            f"[habana_frameworks test double, contract C3 with {FORK_AFTER_LOAD_ENV}=refuse]"
        )
    _init_pid = pid


def initialised_here() -> bool:
    return _init_pid == os.getpid()


def on_release(callback: Callable[[], None]) -> None:
    """``callback`` runs whenever this process releases the device it initialised."""
    _release_callbacks.append(callback)


def release() -> bool:
    """End this process's hold on the device; True when it held it (a forked child never does)."""
    global _init_pid
    if _init_pid != os.getpid():
        return False
    _init_pid = None
    for callback in list(_release_callbacks):
        callback()
    return True
