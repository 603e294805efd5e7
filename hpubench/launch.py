"""The launcher: every cell in its own process, so a crash, a hang or a leaked device costs one cell.

Isolation is what makes a several-hundred-cell matrix finish: a segfault in a kernel, a hung collective
or a cell that never releases device memory is recorded as that cell's failure and the run goes on. Its
price is a process per cell, kept small by forking from pre-warmed zygotes (``hpubench.zygote``) that
imported torch once; ``isolation="spawn"`` pays for a fresh interpreter per cell instead, for stacks
where forking after ``import torch`` is unsafe.

The store gets every record the moment it exists, each as one atomic line, so a run killed at any point
resumes with exactly the missing cells.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hpubench import childwait, exitwords, oomwatch, proctree, zygotewire
from hpubench.cell import Cell, PlannedCell, flops_key
from hpubench.cellwatch import CellWatch
from hpubench.cluster import ClusterEnv
from hpubench.errors import ProbeFailed, UsageError
from hpubench.eta import StepProgress
from hpubench.inventory import Inventory
from hpubench.logcap import cap_log
from hpubench.pluginload import import_limit_s
from hpubench.record import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, CellResult
from hpubench.runoptions import RunOptions
from hpubench.stepfeed import feed_path
from hpubench.store import ResultStore, utc_now_iso

ISOLATIONS = ("fork", "spawn")
TAIL_LINES = 40
ZYGOTE_START_TIMEOUT_S = 300.0  # importing torch (and a device bridge) on a cold, networked filesystem
DETECT_TIMEOUT_S = 300.0
# How long past a cell's own timeout the zygote may take to answer before it is declared wedged.
ZYGOTE_REPLY_SLACK_S = 30.0

EnvSignature = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Event:
    """Progress of a run, for a progress bar: ``index`` is the 1-based position in the plan.

    "progress" events come about once a second while a cell runs (from another thread than the
    others: ``hpubench.cellwatch``), with where the cell is in ``progress``.
    """

    kind: str  # "started" | "progress" | "finished" | "skipped" | "kept" (resumed: earlier record kept)
    index: int
    total: int
    key: str
    status: str | None = None
    wall_s: float | None = None
    reason: str | None = None
    dispatch_s: float | None = None  # request sent -> run_cell entered in the child: our fixed cost
    progress: StepProgress | None = None


class _ZygoteDied(Exception):
    """The zygote process ended or stopped answering; the message says how."""


class _ZygoteStartFailed(Exception):
    """A zygote could not get ready for a reason that is not the user's input."""


def _tail(path: Path | str, lines: int = TAIL_LINES) -> str | None:
    """The last lines of a log, read from its end: logs of a chatty cell can be large."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read()
    except OSError:
        return None
    text = data.decode(errors="replace").rstrip("\n")
    return "\n".join(text.splitlines()[-lines:]) or None


def _child_env(base: dict[str, str], signature: EnvSignature) -> dict[str, str]:
    env = dict(base)
    env.update(signature)
    # The children must run this very hpubench (and its workloads), installed or not.
    root = str(Path(__file__).resolve().parent.parent)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([root, *paths])
    return env


def _cell_options(options: RunOptions | None, key: str, repeat: int) -> RunOptions | None:
    """The run's options for one cell: its own trace file, so repetitions do not overwrite each other."""
    if options is None or options.profile is None:
        return options
    from hpubench.profile import trace_relpath

    rel = trace_relpath(key)
    if repeat:
        rel = rel[: -len(".json")] + f".r{repeat}.json"
    return replace(options, trace_relpath=rel)


def _failed(cell: Cell, reason: str, tail: str | None = None, **kw: Any) -> CellResult:
    return CellResult(cell, STATUS_FAILED, reason=reason, traceback_tail=tail, **kw)


def _watch(feed: Path | None, emit: Callable[[Event], None], index: int, total: int, key: str) -> CellWatch:
    """Follows a cell's step feed: "progress" events while it runs, its steps kept if it fails."""
    return CellWatch(feed, lambda p: emit(Event("progress", index, total, key, progress=p)))


class _Zygote:
    """The launcher's end of one zygote process."""

    def __init__(self, python: str, files: list[str], env: dict[str, str], stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self.oom_before: int | None = None
        self.child_pid: int | None = None  # the cell child currently running, once announced
        args = [python, "-m", "hpubench.zygote"]
        for f in files:
            args += ["--workloads-from", f]
        t0 = time.perf_counter()
        with open(stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
                bufsize=0,
                # Own session: a terminal's Ctrl-C reaches only the launcher, which then stops the
                # zygotes deliberately instead of having them die mid-reply.
                start_new_session=True,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.channel = zygotewire.LineChannel(self.proc.stdout.fileno())
        try:
            ready = self._read(ZYGOTE_START_TIMEOUT_S, starting=True)
        except BaseException:  # a Ctrl-C during the warm-up included: never leave it running
            self.kill()
            raise
        if not ready.get("ready"):
            self.kill()
            msg = str(ready.get("error") or "unknown error")
            if ready.get("usage"):
                raise UsageError(msg)
            raise _ZygoteStartFailed(f"{msg} (see {self.stderr_tail_line()})")
        self.start_s = time.perf_counter() - t0
        self.import_s = float(ready.get("import_s") or 0.0)
        self.catalog: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in ready["workloads"].items()}

    def stderr_tail(self) -> str | None:
        return _tail(self.stderr_path)

    def stderr_tail_line(self) -> str:
        tail = self.stderr_tail()
        return tail.splitlines()[-1] if tail else "no output on stderr"

    def _ended_how(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "stopped responding"
        return exitwords.from_returncode(code, oomwatch.evidence(None, self.oom_before))

    def _read(self, timeout_s: float, starting: bool = False) -> dict[str, Any]:
        try:
            line = self.channel.read_line(timeout_s)
        except TimeoutError:
            self.kill()
            raise (_ZygoteStartFailed if starting else _ZygoteDied)(
                f"no answer within {timeout_s:g} s"
            ) from None
        if line is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            usage = zygotewire.usage_line(self.stderr_tail())
            if starting and usage:
                raise UsageError(usage)
            how = self._ended_how()
            if starting:
                raise _ZygoteStartFailed(f"worker pool process {how}: {self.stderr_tail_line()}")
            raise _ZygoteDied(how)
        try:
            return json.loads(line)
        except ValueError:
            raise _ZygoteDied(f"sent a malformed reply {line[:200]!r}") from None

    def request(self, msg: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and wait for its final reply (a status or an error)."""
        self.child_pid = None
        self.oom_before = oomwatch.oom_kills()  # the zygote itself may be the OOM killer's choice
        try:
            zygotewire.send(self.proc.stdin.fileno(), msg)  # type: ignore[union-attr]
        except OSError:
            raise _ZygoteDied(self._ended_how()) from None
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._read(max(0.0, deadline - time.monotonic()))
            if "forked" in reply:
                self.child_pid = int(reply["forked"])
                continue
            self.child_pid = None
            return reply

    def close(self, timeout_s: float = 5.0) -> None:
        """Ask politely (the zygote kills a running child on end of input), then insist."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                zygotewire.send(self.proc.stdin.fileno(), {"op": "exit"})  # type: ignore[union-attr]
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout_s)
        if self.proc.returncode == 0:
            self.child_pid = None  # it killed and reaped its child itself; that pid may be reused now
        self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self.child_pid is not None:  # the zygote can no longer clean up after its child
            childwait.killpg(self.child_pid, signal.SIGKILL)
            self.child_pid = None
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[union-attr]


class Launcher:
    """Runs cells in isolated processes; owns the zygote pool. Use as a context manager.

    ``base_env`` is the whole environment workers start from (default: this process's); each cell's
    ``env_before_import`` variables are added on top, one zygote per distinct set.
    """

    def __init__(
        self,
        workload_files: list[str] | None = None,
        isolation: str = "fork",
        base_env: dict[str, str] | None = None,
        python: str | None = None,
        cluster: ClusterEnv | None = None,
    ) -> None:
        if isolation not in ISOLATIONS:
            raise UsageError(f"isolation must be one of {', '.join(ISOLATIONS)}, got {isolation!r}")
        if isolation == "fork" and not hasattr(os, "fork"):
            isolation = "spawn"
        self.workload_files = [str(f) for f in workload_files or []]
        self.isolation = isolation
        self.base_env = dict(os.environ if base_env is None else base_env)
        import_limit_s(self.base_env)  # a bad HPUBENCH_PLUGIN_IMPORT_TIMEOUT is refused before any worker
        # Every process of this launcher carries it, and so does all they start: see hpubench.proctree.
        self._token = self.base_env[proctree.TOKEN_ENV] = uuid.uuid4().hex
        self.python = python or sys.executable
        # Multi-node: this node's place (hpubench.cluster). A node other than 0 runs only the cells that
        # span it; its caller gives it a store that writes nothing (node 0 keeps the records).
        self.cluster = cluster
        # Workload name -> accepted option names, learnt by detect(); None until then (or from a worker
        # too old to say), when unknown options are left to the worker to refuse.
        self.workload_options: dict[str, tuple[str, ...]] | None = None
        self._slots: dict[tuple[int, int], Any] = {}  # (plan position, repeat) -> hpubench.dist.launch.Slot
        self._tmp = Path(tempfile.mkdtemp(prefix="hpubench-launch-"))
        # FLOP counts cells of this run made, by hpubench.cell.flops_key, handed to later cells.
        self._flops: dict[str, int] = {}
        self._zygotes: dict[EnvSignature, _Zygote] = {}
        self._broken: dict[EnvSignature, str] = {}  # signature -> why its zygote cannot start
        self._spawned: subprocess.Popen[bytes] | None = None
        self._seq = 0
        self.zygote_start_s: list[float] = []  # one entry per zygote started: the warm-up we pay

    # ---- lifecycle ----------------------------------------------------------------------------------
    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every zygote and forget the scratch files (records are already in the store)."""
        zygotes, self._zygotes = list(self._zygotes.values()), {}
        try:
            for z in zygotes:
                z.close()
            if self._spawned is not None:
                self._kill_spawned()
            self._sweep()
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _abort(self) -> None:
        """Interrupted: stop running children now, without waiting for them to finish their cell."""
        zygotes, self._zygotes = list(self._zygotes.values()), {}
        for z in zygotes:
            z.close(timeout_s=1.0)
        if self._spawned is not None:
            self._kill_spawned()
        self._sweep()

    def _sweep(self) -> None:
        """Kill what this launcher's cells left running anywhere (the zygotes, idle between cells, live)."""
        proctree.sweep(self._token, spare={z.proc.pid for z in self._zygotes.values()})

    # ---- zygotes ------------------------------------------------------------------------------------
    def _signature(self, cell: Cell) -> EnvSignature:
        from hpubench.core import accelerators

        env = accelerators.fork_server_env()
        env.update(accelerators.get(cell.accelerator).env_before_import(cell))
        return tuple(sorted(env.items()))

    @staticmethod
    def _server_signature() -> EnvSignature:
        """The environment of a fork server that serves no particular cell (detection, probes)."""
        from hpubench.core import accelerators

        return tuple(sorted(accelerators.fork_server_env().items()))

    def _next_path(self, stem: str) -> Path:
        self._seq += 1
        return self._tmp / f"{self._seq:05d}-{stem}"

    def _zygote(self, signature: EnvSignature) -> _Zygote:
        z = self._zygotes.get(signature)
        if z is not None and z.proc.poll() is None:
            return z
        if z is not None:  # died between cells: start a fresh one
            z.kill()
            del self._zygotes[signature]
        env = _child_env(self.base_env, signature)
        z = _Zygote(self.python, self.workload_files, env, self._next_path("zygote.stderr"))
        self.zygote_start_s.append(z.start_s)
        self._zygotes[signature] = z
        return z

    def _drop(self, signature: EnvSignature) -> None:
        z = self._zygotes.pop(signature, None)
        if z is not None:
            z.kill()
            self._sweep()  # its cell's orphans, which no subreaper took

    # ---- detection ----------------------------------------------------------------------------------
    def detect(self) -> tuple[Inventory, dict[str, tuple[str, ...]]]:
        """What devices this machine has and which workloads are registered, learnt in a child.

        Detection imports the device frameworks, which fixes their modes for the whole process, so it
        runs in a throw-away child and never in the launcher or a zygote.
        """
        out = self._next_path("detect.json")
        log = self._next_path("detect.log")
        if self.isolation == "spawn":
            return self._detect_spawned(out, log)
        signature = self._server_signature()
        try:
            z = self._zygote(signature)
        except _ZygoteStartFailed as exc:
            raise UsageError(f"cannot start the hpubench worker process: {exc}") from None
        try:
            reply = z.request(
                {"op": "detect", "out": str(out), "log": str(log), "timeout_s": DETECT_TIMEOUT_S},
                DETECT_TIMEOUT_S + ZYGOTE_REPLY_SLACK_S,
            )
        except _ZygoteDied as exc:
            self._drop(signature)
            raise UsageError(f"accelerator detection failed: the worker process died ({exc})") from None
        data = self._read_out(out)
        if data is None or "inventory" not in data:
            raise UsageError(
                f"accelerator detection failed in a child process ({exitwords.reply_reason(reply)}); "
                f"last log line: {self._last_line(log)}; fix: check the device driver and framework install"
            )
        self._keep_option_names(data)
        return Inventory.from_dict(data["inventory"]), dict(z.catalog)

    def _keep_option_names(self, data: dict[str, Any]) -> None:
        names = data.get("workload_options")
        if isinstance(names, dict):
            self.workload_options = {k: tuple(v) for k, v in names.items()}

    def probe(self, args: list[str], timeout_s: float) -> dict[str, Any]:
        """``hpubench.probe`` (estimates' model facts and rates) with ``args``, in a child forked from the
        pre-warmed server, which has torch and the workload files loaded already: a fresh interpreter
        would pay ``import torch`` again. Raises ProbeFailed with the reason (spawn isolation included:
        the caller then runs the probe on its own)."""
        if self.isolation == "spawn":
            raise ProbeFailed("no pre-warmed worker under spawn isolation")
        out = self._next_path("probe.json")
        log = self._next_path("probe.log")
        signature = self._server_signature()
        try:
            z = self._zygote(signature)
            reply = z.request(
                {"op": "probe", "argv": args, "out": str(out), "log": str(log), "timeout_s": timeout_s},
                timeout_s + ZYGOTE_REPLY_SLACK_S,
            )
        except (_ZygoteStartFailed, _ZygoteDied) as exc:
            self._drop(signature)
            raise ProbeFailed(f"the worker process died ({exc})") from None
        data = self._read_out(out)
        if data is None:
            raise ProbeFailed(f"{exitwords.reply_reason(reply)}; last log line: {self._last_line(log)}")
        return data

    def detect_for_doctor(self) -> dict[str, Any]:
        """What ``detect`` learns plus ``hpubench doctor``'s facts (``"doctor"``), from a fresh interpreter
        whatever the isolation: the doctor must see what a process starting here sees (a bridge that
        ``import torch`` loads, a mode read at import), not a fork of a warm one. Raises ProbeFailed with
        the reason and the log's last line when the child gave no result; a bad workload is a
        UsageError."""
        out = self._next_path("doctor.json")
        log = self._next_path("doctor.log")
        data, reply = self._spawn_detect(out, log, ["--doctor"])
        if data is None or "inventory" not in data:
            raise ProbeFailed(f"{exitwords.reply_reason(reply)}; last log line: {self._last_line(log)}")
        return data

    def _detect_spawned(self, out: Path, log: Path) -> tuple[Inventory, dict[str, tuple[str, ...]]]:
        data, reply = self._spawn_detect(out, log, [])
        if data is None or "inventory" not in data:
            raise UsageError(
                f"accelerator detection failed in a child process ({exitwords.reply_reason(reply)}); "
                f"last log line: {self._last_line(log)}; fix: check the device driver and framework install"
            )
        catalog = {k: tuple(v) for k, v in data.get("workloads", {}).items()}
        self._keep_option_names(data)
        return Inventory.from_dict(data["inventory"]), catalog

    def _spawn_detect(
        self, out: Path, log: Path, extra_args: list[str]
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """``python -m hpubench.zygote --detect``: its JSON (None when it wrote none) and how it ended."""
        args = [self.python, "-m", "hpubench.zygote", "--detect", str(out), *extra_args]
        for f in self.workload_files:
            args += ["--workloads-from", f]
        with open(log, "wb") as logf:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=logf,
                env=_child_env(self.base_env, self._server_signature()),
                start_new_session=True,
            )
        self._spawned = proc
        reply = self._wait_spawned(proc, DETECT_TIMEOUT_S, log)
        self._spawned = None
        usage = zygotewire.usage_line(_tail(log))
        if usage:
            raise UsageError(usage)
        return self._read_out(out), reply

    # ---- running ------------------------------------------------------------------------------------
    def run(
        self,
        planned: list[PlannedCell],
        store: ResultStore,
        timeout_s: float,
        resume: bool = False,
        on_event: Callable[[Event], None] | None = None,
        repeat: int = 1,
        options: RunOptions | None = None,
        adjust: Callable[[int, int, PlannedCell], tuple[PlannedCell, float]] | None = None,
    ) -> list[CellResult]:
        """Run the plan in order, appending each record to ``store`` as soon as it exists.

        ``adjust(position, repeat, planned)``, when given, is asked just before each cell and may change
        its step counts or skip it, and shorten its timeout (``hpubench.preflight.BudgetRun``).

        ``options`` (profile, telemetry, memory timeline, loader pass) go to every worker unchanged,
        except that each cell gets its own trace file name; they never change a cell or its key.

        With ``repeat`` N > 1 the whole plan runs N times, one pass after another, and each record
        carries its pass as ``CellResult.repeat``: interleaving the passes (rather than running one cell
        N times back to back) spreads slow drift of the machine over every cell evenly, so repetitions
        measure between-run variance instead of one moment of it. Skipped cells are recorded once.

        With ``resume`` a (cell, repeat) that already has an ok or failed record is not run again (its
        record is returned as is); skipped cells are always re-derived from the plan. On
        KeyboardInterrupt the running child and the zygotes are killed and the interrupt propagates; the
        store then holds only complete records, so a resume continues where it stopped.
        """
        if timeout_s <= 0:
            raise UsageError(f"timeout must be positive, got {timeout_s}")
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise UsageError(f"repeat must be a whole number >= 1, got {repeat!r}")
        emit = on_event or (lambda _e: None)
        existing = {r.run_id: r for r in store.load()} if resume else {}
        total = len(planned) * repeat
        results: list[CellResult] = []
        from hpubench.dist.launch import schedule

        self._slots = schedule(planned, repeat, self.cluster)
        try:
            for rep in range(repeat):
                for i, pc in enumerate(planned):
                    index = rep * len(planned) + i + 1
                    cell_timeout = timeout_s
                    if adjust is not None:
                        pc, limit = adjust(i, rep, pc)
                        cell_timeout = min(timeout_s, limit)
                    cell = pc.cell
                    key = cell.key
                    previous = existing.get((key, rep))
                    if self.cluster is not None and not self.cluster.takes_part(cell):
                        # Node > 0 and a cell that does not span it: node 0's alone, nothing to record.
                        why = f"node 0 runs it, not node {self.cluster.node_rank}"
                        emit(Event("skipped", index, total, key, STATUS_SKIPPED, reason=why))
                        continue
                    if not pc.runnable:
                        if rep == 0:
                            result = CellResult(cell, STATUS_SKIPPED, reason=pc.skip_reason)
                            if previous != result:  # a resumed run need not repeat an identical skip
                                store.append(result)
                            results.append(result)
                        emit(Event("skipped", index, total, key, STATUS_SKIPPED, reason=pc.skip_reason))
                        continue
                    if previous is not None and previous.status in (STATUS_OK, STATUS_FAILED):
                        result = previous
                        emit(
                            Event(
                                "kept", index, total, key, previous.status, previous.wall_s, previous.reason
                            )
                        )
                    elif cell.world_size > 1:
                        emit(Event("started", index, total, key))
                        log = store.log_path(key, rep)
                        cell_options = _cell_options(options, key, rep)
                        # Rank 0 streams the steps; it runs on node 0, which alone can follow them.
                        node0 = self.cluster is None or self.cluster.node_rank == 0
                        with _watch(feed_path(log) if node0 else None, emit, index, total, key) as watch:
                            result = self._multi_process_cell(
                                cell, log, cell_timeout, cell_options, rep, i, watch.path
                            )
                        result = replace(watch.keep_partial(result), repeat=rep)
                        cap_log(log)  # the cell has ended: its reason already read the tail
                        kind = "skipped" if result.status == STATUS_SKIPPED else "finished"
                        emit(Event(kind, index, total, key, result.status, result.wall_s, result.reason))
                        if kind == "skipped" and rep > 0:
                            continue
                        if previous != result:
                            store.append(result)
                    else:
                        emit(Event("started", index, total, key))
                        log = store.log_path(key, rep)
                        with _watch(feed_path(log), emit, index, total, key) as watch:
                            result, dispatch_s = self._single_process_cell(
                                cell, log, cell_timeout, _cell_options(options, key, rep), watch.path
                            )
                        result = replace(watch.keep_partial(result), repeat=rep)
                        cap_log(log)  # the cell has ended: its reason already read the tail
                        store.append(result)
                        emit(
                            Event(
                                "finished",
                                index,
                                total,
                                key,
                                result.status,
                                result.wall_s,
                                result.reason,
                                dispatch_s,
                            )
                        )
                    results.append(result)
        except BaseException:
            self._abort()
            raise
        return results

    def _multi_process_cell(
        self,
        cell: Cell,
        log: Path,
        timeout_s: float,
        options: RunOptions | None,
        rep: int,
        position: int,
        feed: Path | None = None,
    ) -> CellResult:
        """Cells spanning several processes (devices x nodes > 1): torch.distributed's elastic agent
        starts one rank per device, each running the same worker code (``hpubench.dist``).

        Always a fresh interpreter per rank (the agent spawns them), whatever ``isolation`` says.
        """
        from hpubench.dist.launch import Slot, run_distributed_cell

        try:
            signature = self._signature(cell)
        except KeyError as exc:
            return _failed(cell, str(exc.args[0]) if exc.args else str(exc))
        if self.cluster is not None and self.cluster.node_rank > 0:
            # Another node's log must not replace node 0's when --out is on a shared filesystem.
            log = log.with_name(f"{log.stem}.node{self.cluster.node_rank}{log.suffix}")
        outcome = run_distributed_cell(
            cell,
            repeat=rep,
            cluster=self.cluster,
            slot=self._slots.get((position, rep), Slot(0, ())),
            env=_child_env(self.base_env, signature),
            python=self.python,
            workload_files=self.workload_files,
            options=None if options is None else options.to_dict(),
            work_dir=self._next_path("dist"),
            log=log,
            timeout_s=timeout_s,
            feed=feed,
        )
        return outcome.result

    def _single_process_cell(
        self,
        cell: Cell,
        log: Path,
        timeout_s: float,
        options: RunOptions | None = None,
        feed: Path | None = None,
    ) -> tuple[CellResult, float | None]:
        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            signature = self._signature(cell)
        except KeyError as exc:
            return _failed(cell, str(exc.args[0]) if exc.args else str(exc)), None
        out = self._next_path("result.json")
        started_at = utc_now_iso()
        if self.isolation == "spawn":
            sent = time.time()
            reply = self._run_spawned(cell, signature, out, log, timeout_s, sent, options, feed)
        else:
            if signature in self._broken:
                return _failed(cell, self._broken[signature], started_at=started_at), None
            try:
                z = self._zygote(signature)
            except _ZygoteStartFailed as exc:
                self._broken[signature] = f"the pre-warmed worker process could not start: {exc}"
                return _failed(cell, self._broken[signature], started_at=started_at), None
            sent = time.time()
            request = {
                "op": "run",
                "cell": cell.to_dict(),
                "out": str(out),
                "log": str(log),
                "timeout_s": timeout_s,
                "dispatched_at": sent,
                "options": None if options is None else options.to_dict(),
                "flops_hints": dict(self._flops),
                "feed": None if feed is None else str(feed),
            }
            try:
                reply = z.request(request, timeout_s + childwait.KILL_GRACE_S + ZYGOTE_REPLY_SLACK_S)
            except _ZygoteDied as exc:
                zygote_tail = z.stderr_tail()
                self._drop(signature)
                return _failed(
                    cell,
                    f"the pre-warmed worker process died while running this cell ({exc}); "
                    "it was restarted for the next cell",
                    _tail(log) or zygote_tail,
                    started_at=started_at,
                    wall_s=time.time() - sent,
                ), None
        return self._collect(cell, reply, out, log, timeout_s, started_at, sent)

    def _run_spawned(
        self,
        cell: Cell,
        signature: EnvSignature,
        out: Path,
        log: Path,
        timeout_s: float,
        sent: float,
        options: RunOptions | None = None,
        feed: Path | None = None,
    ) -> dict[str, Any]:
        args = [
            self.python,
            "-m",
            "hpubench.zygote",
            "--once",
            json.dumps(cell.to_dict()),
            str(out),
            str(log),
            "--dispatched-at",
            repr(sent),
        ]
        for f in self.workload_files:
            args += ["--workloads-from", f]
        if options is not None:
            args += ["--options", json.dumps(options.to_dict())]
        if feed is not None:
            args += ["--feed", str(feed)]
        ready_r, ready_w = os.pipe()
        args += ["--ready-fd", str(ready_w)]
        try:
            with open(log, "wb") as logf:  # interpreter start-up errors land in the log too
                self._spawned = subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=logf,
                    stderr=logf,
                    env=_child_env(self.base_env, signature),
                    start_new_session=True,
                    pass_fds=(ready_w,),
                )
        finally:
            os.close(ready_w)
        try:
            return self._wait_spawned(self._spawned, timeout_s, log, ready_r)
        finally:
            os.close(ready_r)
            self._spawned = None
            self._sweep()  # what the cell started outside its process group

    def _wait_spawned(
        self, proc: subprocess.Popen[bytes], timeout_s: float, log: Path, ready_fd: int | None = None
    ) -> dict[str, Any]:
        """Wait for a spawned child; with ``ready_fd`` the timeout starts once its imports are done.

        The same wait as the zygote's (timeout on the whole process group, leftovers killed), so both
        isolation modes report the same statuses.
        """
        if ready_fd is not None:
            ready, _, _ = select.select([ready_fd], [], [], ZYGOTE_START_TIMEOUT_S)
            # Nothing in time: the imports hang, so the cell's budget is spent. Empty read: it exited
            # before getting ready, and the wait below sees how.
            if not ready:
                timeout_s = 0.0
            else:
                os.read(ready_fd, 1)
        reply = childwait.wait_child(proc.pid, timeout_s, str(log), None)
        assert reply is not None  # only a control channel can end the wait early
        # We reaped it ourselves; tell Popen so it neither waits again nor warns.
        proc.returncode = -reply["signal"] if reply["signal"] else reply["exitcode"]
        return reply

    def _kill_spawned(self) -> None:
        proc, self._spawned = self._spawned, None
        if proc is not None:
            childwait.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    # ---- results ------------------------------------------------------------------------------------
    @staticmethod
    def _read_out(out: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(out.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            return {"unreadable": f"{type(exc).__name__}: {exc}"}
        finally:
            with contextlib.suppress(OSError):
                out.unlink()
        return data if isinstance(data, dict) else {"unreadable": "not a JSON object"}

    @staticmethod
    def _last_line(log: Path) -> str:
        tail = _tail(log, 1)
        return tail.strip() if tail else "(empty)"

    def _learn_flops(self, result: CellResult) -> None:
        """Keep a single-process cell's own FLOP count for the cells after it (same code, same run)."""
        rt = result.runtime
        count, batch = rt.get("flops_per_device_step"), rt.get("batch_size")
        if rt.get("flops_counted") == "here" and isinstance(count, int) and isinstance(batch, int):
            self._flops[flops_key(result.cell.workload, result.cell.size, batch)] = count

    def _collect(
        self,
        cell: Cell,
        reply: dict[str, Any],
        out: Path,
        log: Path,
        timeout_s: float,
        started_at: str,
        sent: float,
    ) -> tuple[CellResult, float | None]:
        data = self._read_out(out)
        wall_s = reply.get("wall_s")
        if data is not None and "result" in data:
            # A result on disk wins even over a timeout: the child finished right at the deadline.
            try:
                result = CellResult.from_dict(data["result"])
            except (KeyError, TypeError, ValueError) as exc:
                return _failed(
                    cell,
                    f"the worker wrote an unreadable result ({exc})",
                    _tail(log),
                    started_at=started_at,
                    wall_s=wall_s,
                ), None
            self._learn_flops(result)
            child_started = data.get("child_started_at")
            return result, (child_started - sent) if isinstance(child_started, (int, float)) else None
        if data is not None and "unreadable" in data:
            reason = f"the worker wrote an unreadable result ({data['unreadable']})"
        else:
            reason = exitwords.reply_reason(reply, timeout_s)
        return _failed(cell, reason, _tail(log), started_at=started_at, wall_s=wall_s), None
