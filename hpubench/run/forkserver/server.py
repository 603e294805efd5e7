"""The pre-warmed fork server: pays for ``import torch`` once, then forks one isolated child per cell.

A full matrix has hundreds of cells, and a fresh interpreter importing torch costs 1-2 s each, which
would dwarf a tiny cell. So the launcher starts one zygote per distinct pre-import environment (the
``env_before_import`` variables such as ``PT_HPU_LAZY_MODE`` must be in force before the device
framework is imported, and some torch builds import it on ``import torch``), and the zygote forks a child
for every cell. Every zygote also carries each accelerator's ``fork_server_env`` (HPU: bridge autoload
off), so ``import torch`` here loads no device framework that a forked child would inherit. The zygote
itself never runs a torch op and never touches a device: a CUDA or HPU context does not survive a fork,
and an initialised OpenMP pool makes forked children hang.

Each child gets its own session (so the whole tree it may spawn can be killed as one process group),
stdout/stderr going to the cell's log, and faulthandler (a segfault or a timeout leaves a Python stack
in the log). Results travel through a file written atomically, never through the protocol pipe, so a
child killed mid-write cannot corrupt anything.

Protocol: JSON lines. The zygote's stdout is reserved for it (its own ``sys.stdout`` goes to stderr).

- zygote -> launcher, once at start: ``{"ready": true, "workloads": {name: [sizes]}, "pid": N,
  "import_s": T}`` or ``{"ready": false, "error": MESSAGE, "usage": BOOL}`` followed by exit.
- launcher -> zygote: ``{"op": "run", "cell": {...}, "out": PATH, "log": PATH, "timeout_s": T,
  "dispatched_at": EPOCH, "options": {...}, "flops_hints": {KEY: FLOPS}, "feed": PATH}`` (``options``:
  ``RunOptions.to_dict()``, optional; ``flops_hints``: FLOP counts earlier cells made, optional;
  ``feed``: where the child streams its step times, ``hpubench.run.stepfeed``, optional),
  ``{"op": "detect", "out": PATH, "log": PATH, "timeout_s": T}``,
  ``{"op": "probe", "argv": [ARG, ...], "out": PATH, "log": PATH, "timeout_s": T}`` (the estimates'
  probe, ``hpubench.run.probe``, with torch and the workload files loaded already),
  ``{"op": "exit"}``. End of input means the launcher is gone: the running child is killed, the
  zygote exits.
- zygote -> launcher per request: ``{"forked": PID}`` as soon as the child exists, then
  ``{"status": "exited"|"signaled"|"timeout", "exitcode": N|null, "signal": N|null, "wall_s": T,
  "pid": PID}``; a malformed request gets ``{"error": MESSAGE}``.
- the child's ``out`` file: ``{"result": CellResult.to_dict(), "child_started_at": EPOCH,
  "child_finished_at": EPOCH}`` for run, ``{"inventory": {...}}`` for detect, the probe's JSON for
  probe.

``python -m hpubench.run.forkserver.server --once CELL_JSON OUT LOG`` runs one cell in this fresh
interpreter instead
(``isolation="spawn"``: platforms or device stacks where forking a process that imported torch is
unsafe); ``--ready-fd N`` makes it write a byte to fd N once its imports are done, so the launcher
starts the cell's timeout there; ``--feed PATH`` is the step feed. ``--detect OUT`` is the one-shot
mode for detection (``--doctor``: doctor's facts too; ``--quiet-fd N``: their timings wait for EOF on N).

This module is the server loop; what a child does is ``hpubench.run.forkserver.child``, how a child is waited
for (the timeout on its process group) is ``hpubench.run.executors.wait``, and the JSON-lines wire is
``hpubench.run.forkserver.wire``. The launcher's end of a zygote is ``hpubench.run.forkserver.client``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import signal
import sys
import time
import traceback
import warnings
from typing import Any

from hpubench.errors import UsageError
from hpubench.run import proctree
from hpubench.run.executors.wait import killpg, note, wait_child
from hpubench.run.forkserver.child import (
    child_main,
    detect_once,
    one_line,
    prepare,
    release_devices,
    run_once,
)
from hpubench.run.forkserver.wire import USAGE_ERROR_PREFIX, LineChannel, send


def fork_and_wait(req: dict[str, Any], proto_fd: int, control: LineChannel) -> dict[str, Any] | None:
    for key in ("out", "log"):
        if not isinstance(req.get(key), str):
            return {"error": f"request needs a string {key!r}"}
    if req["op"] == "run" and not isinstance(req.get("cell"), dict):
        return {"error": "run request needs a 'cell' object"}
    if req["op"] == "probe" and not (
        isinstance(req.get("argv"), list) and all(isinstance(a, str) for a in req["argv"])
    ):
        return {"error": "probe request needs an 'argv' list of strings"}
    timeout_s = float(req.get("timeout_s") or 3600.0)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        child_main(req, (proto_fd, control.fd))
    try:
        send(proto_fd, {"forked": pid})
    except BrokenPipeError:  # the launcher is gone: so is the reason to run the cell
        killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return None
    reply = wait_child(pid, timeout_s, req["log"], control)
    # This server is a subreaper: what the cell left running outside its process group came up to us.
    left = proctree.reap_adopted()
    if left:
        note(req["log"], f"killed {len(left)} process(es) the cell left running: {left}")
    return reply


def serve(workload_files: list[str]) -> int:
    # Keep the real stdout for the protocol; everything printed from here on (ours, torch's, a workload
    # file's) lands on stderr instead of corrupting the protocol stream.
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    # Ctrl-C is the launcher's to handle; it tells us to stop through the protocol.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    proctree.become_subreaper()  # a cell's orphans come to us, to be killed with their cell
    # `import torch` starts one native helper thread, so Python >= 3.12 warns on every fork. Forking
    # after importing torch (but before any op) is what DataLoader workers do too; the warning would only
    # fill the zygote's stderr.
    warnings.filterwarnings(
        "ignore", message=r".*fork\(\) may lead to deadlocks", category=DeprecationWarning
    )
    t0 = time.perf_counter()
    try:
        catalog = prepare(workload_files)
    except Exception as exc:
        if isinstance(exc, UsageError):
            print(USAGE_ERROR_PREFIX + " ".join(str(exc).split()), file=sys.stderr, flush=True)
            send(proto_fd, {"ready": False, "error": " ".join(str(exc).split()), "usage": True})
            return 2
        traceback.print_exc()
        send(proto_fd, {"ready": False, "error": one_line(exc), "usage": False})
        return 1
    gc.collect()
    gc.freeze()  # forked children then do not dirty (copy) the zygote's pages when the GC runs
    send(
        proto_fd,
        {"ready": True, "workloads": catalog, "pid": os.getpid(), "import_s": time.perf_counter() - t0},
    )

    control = LineChannel(0)
    while True:
        line = control.read_line()
        if line is None:
            return 0
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
        except (ValueError, AttributeError):
            send(proto_fd, {"error": f"malformed request: {line[:200]!r}"})
            continue
        if op == "exit":
            return 0
        if op not in ("run", "detect", "probe"):
            send(proto_fd, {"error": f"unknown op {op!r}"})
            continue
        reply = fork_and_wait(req, proto_fd, control)
        if reply is None:  # the launcher left while the child ran; the child is dead now
            return 0
        try:
            send(proto_fd, reply)
        except BrokenPipeError:  # the launcher left just as the child finished
            return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hpubench.run.forkserver.server", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--workloads-from", action="append", default=[], metavar="FILE")
    parser.add_argument("--once", nargs=3, metavar=("CELL_JSON", "OUT", "LOG"))
    parser.add_argument("--detect", metavar="OUT")
    parser.add_argument("--doctor", action="store_true", help="with --detect: hpubench doctor's facts too")
    parser.add_argument(
        "--quiet-fd", type=int, default=None, help="with --doctor: time nothing until this fd reads EOF"
    )
    parser.add_argument("--dispatched-at", type=float, default=None)
    parser.add_argument("--ready-fd", type=int, default=None)
    parser.add_argument("--options", default=None, metavar="RUN_OPTIONS_JSON")
    parser.add_argument("--feed", default=None, metavar="PATH")
    args = parser.parse_args(argv)
    code = 0
    if args.once:
        code = run_once(
            *args.once, args.workloads_from, args.dispatched_at, args.ready_fd, args.options, args.feed
        )
    elif args.detect:
        code = detect_once(args.detect, args.workloads_from, args.doctor, args.quiet_fd)
    else:
        code = serve(args.workloads_from)
    with contextlib.suppress(Exception):
        release_devices()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    # Skip interpreter teardown: device frameworks have been seen to crash in their atexit hooks, which
    # would turn a finished cell into a "crashed" one.
    os._exit(code)


if __name__ == "__main__":
    main()
