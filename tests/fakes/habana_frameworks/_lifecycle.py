"""The double's device lifecycle (not part of the Habana API): load, detect, initialise, fork, exit.

Contract C3 (docs/hpu-contract.md): a child forked after the parent used the Habana runtime cannot use the
device. The double records the pid that initialised the device and the pid that opened a Synapse session
by detecting devices (``is_available`` / ``device_count``: the bridge's ``get_total_device_count`` creates
a session, ``device.cpp`` "This call can be made prior to device acquire so creating a synapse session");
device calls in any other process that inherited either state (a forked child) raise ``RuntimeError``.
The bridge's sources show Synapse only *logging* at such a fork ("synapse is forked while it is active",
``syn_singleton.cpp``) and the session of a bare count ending with the call when nothing else holds it;
what breaks in the child is the driver's shared state. The double takes the strict reading (the child
fails), which code must survive, and logs every fork of a process whose runtime is active as
``synapse.fork<TAB>...`` in the call log, so a test can prove a program never forks after detecting.

What initialises: ``hpu.init()`` in the bridge, which its Python layer calls on first use of the device
(``get_device_name``, ``current_device``, ``synchronize``, memory queries, events, graphs, the first tensor
made on the device, running a lazy graph). The calls are listed in ``INIT_CALLS``.

C3 leaves open whether a child forked from a process that only *loaded* the bridge may use the device.
``HPUBENCH_FAKE_HPU_FORK_AFTER_LOAD`` picks the reading: ``allow`` (default) or ``refuse``.

Release (C5): ``habana_frameworks.torch._hpu_C.cleanup()`` only syncs the lazy threads and clears the
scalar cache (``bindings.cpp``); nothing in 1.19's Python API releases a card. The card is held until the
process exits (the double's hold is a ``flock``, which the kernel drops at exit, ``os._exit`` included).
``cleanup`` before the device was initialised asserts, as ``scalar_cache()``'s ``HABANA_ASSERT`` does.
"""

from __future__ import annotations

import os
import sys

FORK_AFTER_LOAD_ENV = "HPUBENCH_FAKE_HPU_FORK_AFTER_LOAD"
FORK_AFTER_LOAD_VALUES = ("allow", "refuse")

# Calls (as the double records them) that initialise the device, or need it initialised.
INIT_CALLS = frozenset(
    {
        "hpu._lazy_init",
        "hpu.get_device_name",
        "hpu.current_device",
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
# Detection opens a Synapse session (C3) without initialising the device.
SESSION_CALLS = frozenset({"hpu.is_available", "hpu.device_count"})
LAZY_STEP_CALL = "core.mark_step"  # initialises only in lazy mode (detail "lazy"): eager is a no-op
LOAD_CALL = "core.import"

_loaded_pid: int | None = None  # the process that loaded (imported) the bridge
_session_pids: set[int] = set()  # processes that opened a Synapse session by detecting devices
_init_pid: int | None = None  # the process that initialised the device


def fork_after_load() -> str:
    raw = os.environ.get(FORK_AFTER_LOAD_ENV, "allow")
    if raw not in FORK_AFTER_LOAD_VALUES:
        raise ValueError(f"{FORK_AFTER_LOAD_ENV}={raw!r} must be one of {', '.join(FORK_AFTER_LOAD_VALUES)}")
    return raw


def on_call(name: str, detail: str) -> None:
    """Every recorded API call passes here (``_double.record``) before it does anything."""
    global _loaded_pid
    if name == LOAD_CALL:
        _loaded_pid = os.getpid()
    elif name in SESSION_CALLS:  # never refused: detection never raises, in a forked child neither
        _session_pids.add(os.getpid())
    elif name in INIT_CALLS or (name == LAZY_STEP_CALL and detail == "lazy"):
        touch(name)


def _refuse_in_forked_child(what: str) -> None:
    pid = os.getpid()
    owners = [(_init_pid, "initialised")] + [
        (p, "opened by detecting devices") for p in sorted(_session_pids)
    ]
    for owner, state in owners:
        if owner is not None and owner != pid:
            raise RuntimeError(
                f"{what}: HPU device use failed in process {pid}: the Habana runtime was {state} in "
                f"process {owner} before this process was forked from it, and a forked child cannot use "
                "the device (synapse is forked while it is active; start workers with spawn, or fork "
                "before any device call) [habana_frameworks test double, contract C3]"
            )
    if _loaded_pid is not None and _loaded_pid != pid and fork_after_load() == "refuse":
        raise RuntimeError(
            f"{what}: HPU device initialization failed in process {pid}: the Habana bridge was loaded "
            f"in process {_loaded_pid} before this process was forked from it "
            f"[habana_frameworks test double, contract C3 with {FORK_AFTER_LOAD_ENV}=refuse]"
        )


def touch(what: str) -> None:
    """``what`` needs the device: initialise it here, or refuse where C3 says the runtime fails."""
    global _init_pid
    if _init_pid == os.getpid():
        return
    _refuse_in_forked_child(what)
    _init_pid = os.getpid()


def initialised_here() -> bool:
    return _init_pid == os.getpid()


def active_here() -> bool:
    """Whether Synapse is active in this process (a session from detection, or the device initialised)."""
    return os.getpid() == _init_pid or os.getpid() in _session_pids


def cleanup() -> None:
    """``_hpu_C.cleanup``: sync threads, clear the scalar cache (nothing to do here). The card stays held
    (C5); before the device was initialised the bridge's ``HABANA_ASSERT`` fails."""
    if not initialised_here():
        raise RuntimeError("HABANA_ASSERT failed: device_context.scalar_cache_ (cleanup before device init)")


def _log_fork() -> None:
    """Before every ``os.fork``: Synapse's fork hook logs when its runtime is active in the parent."""
    # looked up, not imported: _double imports this module, and a test that unloads the double leaves
    # this hook registered in a process where the double can no longer be imported
    double = sys.modules.get("habana_frameworks._double")
    if double is not None and active_here():
        state = "with acquired device" if initialised_here() else "while it is active"
        double.record("synapse.fork", f"pid={os.getpid()} synapse is forked {state}")


os.register_at_fork(before=_log_fork)
