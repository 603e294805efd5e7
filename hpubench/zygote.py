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
  ``feed``: where the child streams its step times, ``hpubench.stepfeed``, optional),
  ``{"op": "detect", "out": PATH, "log": PATH, "timeout_s": T}``,
  ``{"op": "probe", "argv": [ARG, ...], "out": PATH, "log": PATH, "timeout_s": T}`` (the estimates'
  probe, ``hpubench.probe``, with torch and the workload files loaded already),
  ``{"op": "exit"}``. End of input means the launcher is gone: the running child is killed, the
  zygote exits.
- zygote -> launcher per request: ``{"forked": PID}`` as soon as the child exists, then
  ``{"status": "exited"|"signaled"|"timeout", "exitcode": N|null, "signal": N|null, "wall_s": T,
  "pid": PID}``; a malformed request gets ``{"error": MESSAGE}``.
- the child's ``out`` file: ``{"result": CellResult.to_dict(), "child_started_at": EPOCH,
  "child_finished_at": EPOCH}`` for run, ``{"inventory": {...}}`` for detect, the probe's JSON for
  probe.

``python -m hpubench.zygote --once CELL_JSON OUT LOG`` runs one cell in this fresh interpreter instead
(``isolation="spawn"``: platforms or device stacks where forking a process that imported torch is
unsafe); ``--ready-fd N`` makes it write a byte to fd N once its imports are done, so the launcher
starts the cell's timeout there; ``--feed PATH`` is the step feed. ``--detect OUT`` is the one-shot
mode for detection.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import gc
import json
import os
import select
import signal
import sys
import time
import traceback
import warnings
from typing import Any

from hpubench import oomwatch, proctree

KILL_GRACE_S = 2.0  # between SIGTERM (faulthandler dumps the stack) and SIGKILL on a timeout
POLL_S = 0.005  # child-exit polling interval where pidfd is not available
USAGE_ERROR_PREFIX = "hpubench-zygote: usage error: "
LOG_TAIL_LINES = 40

# Imported before forking so children start warm. The worker imports most of them lazily inside its
# run function; a name missing here only costs time in each child, never correctness.
PREWARM_MODULES = (
    # torch.optim.Optimizer.__init__ imports torch._dynamo (~1.8 s on CPU), so every cell needs it.
    # Importing it initialises no device and starts no thread.
    "torch._dynamo",
    "numpy.ma",  # numpy.percentile pulls it in lazily
    "psutil",
    "hpubench.worker",
    "hpubench.detect",
    "hpubench.core.accelerators",
    "hpubench.core.precision",
    "hpubench.core.strategies",
    "hpubench.core.trainstep",
    "hpubench.metrics",
    "hpubench.measure",
    "hpubench.observe",
    "hpubench.stats",
    "hpubench.peaks",
    "workloads.flops",
)


class LineChannel:
    """JSON-lines reader on a raw fd, select-able: a buffered file object would hide pending lines."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""
        self.eof = False

    def has_line(self) -> bool:
        return b"\n" in self.buf

    def fill(self) -> None:
        """Read what is available now (call only when select says readable)."""
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if not data:
            self.eof = True
        self.buf += data

    def pop_line(self) -> bytes | None:
        if b"\n" not in self.buf:
            return None
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def read_line(self, timeout_s: float | None = None) -> bytes | None:
        """The next line; None at end of input; TimeoutError when nothing complete came in time."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self.has_line():
            if self.eof:
                return None
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                raise TimeoutError
            self.fill()
        return self.pop_line()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send(fd: int, msg: dict[str, Any]) -> None:
    write_all(fd, (json.dumps(msg, separators=(",", ":"), default=str) + "\n").encode())


def killpg(pgid: int, sig: int) -> None:
    """Signal a process group that may already be gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _note(log: str | None, text: str) -> None:
    """A line from the harness into the cell's log, so the log tail says what the harness did."""
    if not log:
        return
    with contextlib.suppress(OSError), open(log, "a") as f:
        f.write(f"\n[hpubench] {text}\n")


def _status_of(wait_status: int) -> tuple[str, int | None, int | None]:
    if os.WIFSIGNALED(wait_status):
        return "signaled", None, os.WTERMSIG(wait_status)
    return "exited", os.waitstatus_to_exitcode(wait_status), None


def wait_child(
    pid: int, timeout_s: float, log: str | None, control: LineChannel | None
) -> dict[str, Any] | None:
    """Wait for a child that leads its own process group; enforce the timeout on the whole group.

    Returns the reply for the launcher, or None when the launcher went away meanwhile (end of input or
    an exit request on ``control``): the child's group is then killed and the caller should exit.
    Other messages arriving meanwhile stay buffered in ``control``.
    """
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    oom_before = oomwatch.oom_kills()
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(pid)  # Linux >= 5.3: wake exactly when the child exits, no polling
    timed_out = False
    killed = False
    kill_at = 0.0
    try:
        while True:
            # Look without reaping: while the child is an unreaped zombie its pid (= its process group
            # id) cannot be reused, so the group kill below cannot hit an unrelated process.
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                _note(
                    log, f"timed out after {timeout_s:g} s: SIGTERM to the process group, stack dump follows"
                )
                killpg(pid, signal.SIGTERM)
                kill_at = now + KILL_GRACE_S
            if timed_out and not killed and now >= kill_at:
                _note(log, f"still alive {KILL_GRACE_S:g} s after SIGTERM: SIGKILL to the process group")
                killpg(pid, signal.SIGKILL)
                killed = True
            if not timed_out:
                wake = deadline
            elif not killed:
                wake = kill_at
            else:
                wake = now + 1.0
            wait = max(0.0, wake - now)
            fds = []
            if pidfd is not None:
                fds.append(pidfd)
            else:
                wait = min(wait, POLL_S)
            if control is not None and not control.eof:
                fds.append(control.fd)
            if fds:
                ready, _, _ = select.select(fds, [], [], wait)
            else:
                time.sleep(wait)
                ready = []
            if control is not None and control.fd in ready:
                control.fill()
                if control.eof or _exit_requested(control):
                    killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return None
    finally:
        if pidfd is not None:
            os.close(pidfd)
    # Whatever the child left in its group (a grandchild it spawned and did not reap) dies with it.
    killpg(pid, signal.SIGKILL)
    _, wstatus, usage = os.wait4(pid, 0)
    status, exitcode, sig = _status_of(wstatus)
    memory = oomwatch.evidence(oomwatch.peak_rss_bytes(usage.ru_maxrss), oom_before)
    return {
        "status": "timeout" if timed_out else status,
        "exitcode": exitcode,
        "signal": sig,
        "wall_s": time.monotonic() - t0,
        "pid": pid,
        "peak_rss_bytes": memory.peak_rss_bytes,
        "memory_limit_bytes": memory.limit_bytes,
        "oom_kills": memory.oom_kills,
    }


def _exit_requested(control: LineChannel) -> bool:
    for raw in control.buf.split(b"\n")[:-1]:
        with contextlib.suppress(ValueError):
            if json.loads(raw).get("op") == "exit":
                return True
    return False


# ---- warm-up ------------------------------------------------------------------------------------------


def prepare(workload_files: list[str]) -> dict[str, list[str]]:
    """Import everything a cell needs, register workloads; the catalog. Raises UsageError for bad files."""
    import torch  # noqa: F401 - the point of the zygote: pay for this import once

    import workloads
    from hpubench import pluginload
    from hpubench.errors import UsageError

    for path in workload_files:
        try:
            # Bounded: a file whose import hangs is given up on (hpubench.pluginload).
            pluginload.load_files([path], workloads.load_file, os.environ, USAGE_ERROR_PREFIX)
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(f"cannot load workload file {path}: {type(exc).__name__}: {exc}") from exc
    workloads.load_entry_points()
    for name in PREWARM_MODULES:
        try:
            __import__(name)
        except Exception as exc:  # the child importing it again reports the error with the cell
            print(
                f"hpubench-zygote: pre-import of {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr
            )
    return {name: list(sizes) for name, sizes in workloads.catalog().items()}


def workload_facts() -> dict[str, Any]:
    """Per workload, the option names it accepts (harness options included) and why it cannot run with
    this installation (a missing optional package), for the launcher to refuse an unknown ``--option``
    and skip what cannot run before any cell runs."""
    import workloads  # loaded by prepare() already: this is a lookup, not an import

    return {"workload_options": workloads.option_catalog(), "workload_unavailable": workloads.unavailable()}


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:500]


# ---- in the child -------------------------------------------------------------------------------------


def _redirect_stdio(log: str, truncate: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if truncate else 0)
    fd = os.open(log, flags, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]


def _arm_faulthandler() -> None:
    faulthandler.enable(file=sys.stderr, all_threads=True)
    # On a timeout the launcher sends SIGTERM first: dump where the cell hung, then die of the signal.
    faulthandler.register(signal.SIGTERM, file=sys.stderr, all_threads=True, chain=True)


def _run_to_file(
    cell_data: dict[str, Any],
    out: str,
    dispatched_at: float | None,
    options_data: dict[str, Any] | None = None,
    flops_hints: dict[str, int] | None = None,
    feed: str | None = None,
) -> None:
    from hpubench.cell import Cell
    from hpubench.record import STATUS_FAILED, CellResult
    from hpubench.store import write_json_atomic

    cell = Cell.from_dict(cell_data)
    started = time.time()
    try:
        from hpubench.runoptions import RunOptions
        from hpubench.worker import run_cell

        result = run_cell(
            cell,
            dispatched_at=dispatched_at,
            options=RunOptions.from_dict(options_data),
            flops_hints=flops_hints,
            progress_path=feed,
        )
    except Exception as exc:  # run_cell never raises for a cell's problem: this is a harness bug
        traceback.print_exc()
        tail = "".join(traceback.format_exception(exc)).splitlines()[-LOG_TAIL_LINES:]
        result = CellResult(
            cell,
            STATUS_FAILED,
            reason=f"hpubench worker error: {_one_line(exc)}",
            traceback_tail="\n".join(tail),
        )
    finished = time.time()
    payload = {"result": result.to_dict(), "child_started_at": started, "child_finished_at": finished}
    write_json_atomic(out, payload, indent=None)


def _detect_to_file(out: str) -> None:
    from hpubench.detect import detect
    from hpubench.store import write_json_atomic

    write_json_atomic(out, {"inventory": detect().to_dict(), **workload_facts()}, indent=None)


def release_devices() -> None:
    """Give back every device this process set up (``Accelerator.release``): ``os._exit`` comes next
    and skips the device frameworks' own exit-time cleanup. Failures go to the log, never up."""
    # Deferred like every hpubench import here; the accelerator registry itself imports no torch.
    from hpubench.core.accelerators import release_all

    for line in release_all():
        print(f"[hpubench] {line}", file=sys.stderr)


def _child(req: dict[str, Any], close_fds: tuple[int, ...]) -> None:
    """Body of a forked child; never returns (returning would run a second zygote loop)."""
    code = 70
    try:
        os.setsid()
        for fd in close_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        _redirect_stdio(req["log"], truncate=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _arm_faulthandler()
        if req["op"] == "run":
            _run_to_file(
                req["cell"],
                req["out"],
                req.get("dispatched_at"),
                req.get("options"),
                req.get("flops_hints"),
                req.get("feed"),
            )
            code = 0
        elif req["op"] == "probe":
            # Deferred like every hpubench import here: the server imports what a cell needs in prepare().
            from hpubench import probe

            code = probe.main([*req["argv"], "--out", req["out"]])
        else:
            _detect_to_file(req["out"])
            code = 0
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            release_devices()
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


# ---- the server ---------------------------------------------------------------------------------------


def _fork_and_wait(req: dict[str, Any], proto_fd: int, control: LineChannel) -> dict[str, Any] | None:
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
        _child(req, (proto_fd, control.fd))
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
        _note(req["log"], f"killed {len(left)} process(es) the cell left running: {left}")
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
        from hpubench.errors import UsageError

        if isinstance(exc, UsageError):
            print(USAGE_ERROR_PREFIX + " ".join(str(exc).split()), file=sys.stderr, flush=True)
            send(proto_fd, {"ready": False, "error": " ".join(str(exc).split()), "usage": True})
            return 2
        traceback.print_exc()
        send(proto_fd, {"ready": False, "error": _one_line(exc), "usage": False})
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
        reply = _fork_and_wait(req, proto_fd, control)
        if reply is None:  # the launcher left while the child ran; the child is dead now
            return 0
        try:
            send(proto_fd, reply)
        except BrokenPipeError:  # the launcher left just as the child finished
            return 0


# ---- one cell in this fresh interpreter (isolation="spawn") --------------------------------------------


def run_once(
    cell_json: str,
    out: str,
    log: str,
    workload_files: list[str],
    dispatched_at: float | None,
    ready_fd: int | None = None,
    options_json: str | None = None,
    feed: str | None = None,
) -> int:
    """One cell in this interpreter; ``ready_fd`` gets a byte once imports are done, so the launcher
    starts the cell's timeout there (a timeout means the same in both isolation modes)."""
    # The launcher already made this process a session leader and created the log.
    _redirect_stdio(log, truncate=False)
    _arm_faulthandler()
    cell_data = json.loads(cell_json)
    try:
        prepare(workload_files)
    except Exception as exc:
        from hpubench.cell import Cell
        from hpubench.record import STATUS_FAILED, CellResult
        from hpubench.store import write_json_atomic

        traceback.print_exc()
        result = CellResult(Cell.from_dict(cell_data), STATUS_FAILED, reason=_one_line(exc))
        write_json_atomic(out, {"result": result.to_dict()}, indent=None)
        return 0
    if ready_fd is not None:
        with contextlib.suppress(OSError):
            os.write(ready_fd, b"1")
            os.close(ready_fd)
    options = json.loads(options_json) if options_json else None
    _run_to_file(cell_data, out, dispatched_at, options, feed=feed)
    return 0


def detect_once(out: str, workload_files: list[str], doctor: bool = False) -> int:
    """``--detect``: inventory and workload catalog; with ``doctor``, ``hpubench doctor``'s facts too,
    gathered first (before detection imports any device framework: one of the facts is whether
    ``import torch`` alone loaded one)."""
    from hpubench.errors import UsageError
    from hpubench.store import write_json_atomic

    try:
        catalog = prepare(workload_files)
    except UsageError as exc:
        print(USAGE_ERROR_PREFIX + " ".join(str(exc).split()), file=sys.stderr, flush=True)
        return 2
    _arm_faulthandler()
    payload: dict[str, Any] = {}
    if doctor:
        from hpubench.doctor_probe import child_facts

        payload["doctor"] = child_facts()
    from hpubench.detect import detect

    payload.update(inventory=detect().to_dict(), workloads=catalog, **workload_facts())
    write_json_atomic(out, payload, indent=None)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hpubench.zygote", description=__doc__.split("\n")[0])
    parser.add_argument("--workloads-from", action="append", default=[], metavar="FILE")
    parser.add_argument("--once", nargs=3, metavar=("CELL_JSON", "OUT", "LOG"))
    parser.add_argument("--detect", metavar="OUT")
    parser.add_argument("--doctor", action="store_true", help="with --detect: hpubench doctor's facts too")
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
        code = detect_once(args.detect, args.workloads_from, args.doctor)
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
