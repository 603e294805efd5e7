"""The worker's side of a cell: what a cell's process does, forked from the zygote or in a fresh interpreter.

``prepare`` is the warm-up (``import torch``, the workload files, bounded by
``HPUBENCH_PLUGIN_IMPORT_TIMEOUT``, and the modules every cell needs), paid once by the zygote before it
forks, or by a spawned child (``run_once``, ``detect_once``) and each rank of a distributed cell for
itself. ``child_main`` is the body of a forked child: its own session, stdout/stderr into the cell's
log, faulthandler armed (a segfault or a timeout's SIGTERM leaves a Python stack in the log), the result
written atomically to a file, devices given back, ``os._exit``.

This module imports no torch: ``prepare`` decides when torch, the workloads and the cell runner
(``hpubench.run.worker``) get imported (after the server has moved its own stdout out of the protocol's
way, with the pre-import environment in force), so those imports stay deferred in the functions.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import select
import signal
import sys
import time
import traceback
from typing import Any

from hpubench import accelerators
from hpubench.accelerators import release_all
from hpubench.errors import UsageError
from hpubench.plan import dimensions
from hpubench.plan.cell import Cell
from hpubench.plan.runoptions import RunOptions
from hpubench.plugins import files as pluginload
from hpubench.precision import spec as precisions
from hpubench.run.detect import detect
from hpubench.run.doctorfacts import child_facts
from hpubench.run.executors.base import WORKER_START_TIMEOUT_S
from hpubench.run.forkserver.wire import USAGE_ERROR_PREFIX
from hpubench.run.hostcondition import note_fresh_interpreter
from hpubench.store.record import STATUS_FAILED, CellResult
from hpubench.store.rundir import write_json_atomic

LOG_TAIL_LINES = 40


# Imported before forking so children start warm (most come with hpubench.run.worker, which imports them
# at its own import); a name missing here only costs time in each child, never correctness.
PREWARM_MODULES = (
    # torch.optim.Optimizer.__init__ imports torch._dynamo (~1.8 s on CPU), so every cell needs it.
    # Importing it initialises no device and starts no thread.
    "torch._dynamo",
    "numpy.ma",  # numpy.percentile pulls it in lazily
    "psutil",
    "hpubench.run.worker",
    "hpubench.run.detect",
    "hpubench.accelerators",
    "hpubench.precision.apply",
    "hpubench.strategy.runtime",
    "hpubench.run.trainstep",
    "hpubench.analysis.metrics",
    "hpubench.measure.steps",
    "hpubench.measure.observe",
    "hpubench.analysis.stats.summary",
    "hpubench.analysis.peaks",
    "workloads.flops",
)


def prepare(workload_files: list[str]) -> dict[str, list[str]]:
    """Import everything a cell needs, register workloads; the catalog. Raises UsageError for bad files."""
    # deferred: the point of the zygote is to pay for torch once, here, after the server set up its stdout
    import torch  # noqa: F401

    import workloads  # deferred: the workloads import torch

    for path in workload_files:
        try:
            # Bounded: a file whose import hangs is given up on (hpubench.plugins.files).
            pluginload.load_files([path], workloads.load_file, os.environ, USAGE_ERROR_PREFIX)
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(f"cannot load workload file {path}: {type(exc).__name__}: {exc}") from exc
    workloads.load_entry_points()
    # The other plugin kinds too, once here rather than in every forked child: each scan of the installed
    # packages' entry points costs 3-4 ms, and a cell's child asked for them on its way to the first step.
    accelerators.load_entry_points()
    precisions.load_entry_points()
    dimensions.load_entry_points()
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
    import workloads  # deferred: imports torch; loaded by prepare() already, so this is a lookup

    return {"workload_options": workloads.option_catalog(), "workload_unavailable": workloads.unavailable()}


def one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:500]


# ---- in the child -------------------------------------------------------------------------------------


def redirect_stdio(log: str, truncate: bool) -> None:
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


def arm_faulthandler() -> None:
    faulthandler.enable(file=sys.stderr, all_threads=True)
    # On a timeout the launcher sends SIGTERM first: dump where the cell hung, then die of the signal.
    faulthandler.register(signal.SIGTERM, file=sys.stderr, all_threads=True, chain=True)


def run_to_file(
    cell_data: dict[str, Any],
    out: str,
    dispatched_at: float | None,
    options_data: dict[str, Any] | None = None,
    flops_hints: dict[str, int] | None = None,
    feed: str | None = None,
) -> None:
    cell = Cell.from_dict(cell_data)
    started = time.time()
    try:
        # deferred: imports torch (prepare() loaded it already); a failure here is this cell's record
        from hpubench.run.worker import run_cell

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
            reason=f"hpubench worker error: {one_line(exc)}",
            traceback_tail="\n".join(tail),
        )
    finished = time.time()
    payload = {"result": result.to_dict(), "child_started_at": started, "child_finished_at": finished}
    write_json_atomic(out, payload, indent=None, durable=False)


def detect_to_file(out: str) -> None:
    write_json_atomic(out, {"inventory": detect().to_dict(), **workload_facts()}, indent=None)


def release_devices() -> None:
    """Give back every device this process set up (``Accelerator.release``): ``os._exit`` comes next
    and skips the device frameworks' own exit-time cleanup. Failures go to the log, never up."""
    for line in release_all():
        print(f"[hpubench] {line}", file=sys.stderr)


def child_main(req: dict[str, Any], close_fds: tuple[int, ...]) -> None:
    """Body of a forked child; never returns (returning would run a second zygote loop)."""
    code = 70
    try:
        os.setsid()
        for fd in close_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        redirect_stdio(req["log"], truncate=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        arm_faulthandler()
        if req["op"] == "run":
            run_to_file(
                req["cell"],
                req["out"],
                req.get("dispatched_at"),
                req.get("options"),
                req.get("flops_hints"),
                req.get("feed"),
            )
            code = 0
        elif req["op"] == "probe":
            from hpubench.run import probe  # deferred: imports torch (prepare() loaded it already)

            code = probe.main([*req["argv"], "--out", req["out"]])
        else:
            detect_to_file(req["out"])
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
    redirect_stdio(log, truncate=False)
    arm_faulthandler()
    note_fresh_interpreter()
    cell_data = json.loads(cell_json)
    try:
        prepare(workload_files)
    except Exception as exc:
        traceback.print_exc()
        result = CellResult(Cell.from_dict(cell_data), STATUS_FAILED, reason=one_line(exc))
        write_json_atomic(out, {"result": result.to_dict()}, indent=None, durable=False)
        return 0
    if ready_fd is not None:
        with contextlib.suppress(OSError):
            os.write(ready_fd, b"1")
            os.close(ready_fd)
    options = json.loads(options_json) if options_json else None
    run_to_file(cell_data, out, dispatched_at, options, feed=feed)
    return 0


def wait_for_eof(fd: int | None, timeout_s: float = WORKER_START_TIMEOUT_S) -> None:
    """Until ``fd`` reads EOF (the launcher closed its end, or exited), or ``timeout_s``; nothing when
    ``fd`` is None. The default bound is the launcher's own for starting the worker it closes the pipe
    after, so the wait ends on its own only where the launcher never closes it."""
    if fd is None:
        return
    deadline = time.monotonic() + timeout_s
    with contextlib.suppress(OSError):
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], left)
            if ready and not os.read(fd, 64):
                return


def detect_once(
    out: str, workload_files: list[str], doctor: bool = False, quiet_fd: int | None = None
) -> int:
    """``--detect``: inventory and workload catalog; with ``doctor``, ``hpubench doctor``'s facts too,
    gathered first (before detection imports any device framework: one of the facts is whether
    ``import torch`` alone loaded one); the ones that time something wait for EOF on ``quiet_fd``."""
    try:
        catalog = prepare(workload_files)
    except UsageError as exc:
        print(USAGE_ERROR_PREFIX + " ".join(str(exc).split()), file=sys.stderr, flush=True)
        return 2
    arm_faulthandler()
    payload: dict[str, Any] = {}
    if doctor:
        payload["doctor"] = child_facts(lambda: wait_for_eof(quiet_fd))
    payload.update(inventory=detect().to_dict(), workloads=catalog, **workload_facts())
    write_json_atomic(out, payload, indent=None, durable=False)
    return 0
