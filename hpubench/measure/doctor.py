"""``hpubench doctor``, the pure half: collected facts in, findings out. No torch, no I/O.

The facts are gathered elsewhere: the host's in the launcher process (``hpubench.run.doctorfacts``, no
device framework), each accelerator's in a throw-away child by its ``doctor_facts`` hook, because
importing a device framework fixes its modes for the whole process. Each accelerator turns its own facts
into findings (``Accelerator.doctor_findings``, with the helpers here), so nothing in this module knows
a device type by name.

A finding is OK, WARN or FAIL; WARN and FAIL carry the fix in one line. Any FAIL makes the command exit 1.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hpubench.measure.conditions import THREADS_ENV, plan_threads, thread_policy
from hpubench.measure.heap import (
    HEAP_ENV,
    MMAP_THRESHOLD,
    TRIM_THRESHOLD,
    USER_MALLOC_ENV,
    heap_policy,
    user_allocator,
)
from hpubench.measure.telemetry.summary import SAMPLER_NOTE_PCT
from hpubench.plan.runoptions import DEFAULT_TELEMETRY_INTERVAL_S

OK, WARN, FAIL = "OK", "WARN", "FAIL"
LEVELS = (OK, WARN, FAIL)
GIB = 1024**3
# Less host memory free than this share of the total is a warning: cells' estimates assume most of it.
LOW_HOST_MEMORY_SHARE = 0.10
# Sections in the order they are printed; an accelerator's section is its name.
HOST, TORCH, PLAN = "host", "torch", "plan"


@dataclass(frozen=True)
class Finding:
    section: str  # "host", "torch", an accelerator's name, "plan"
    check: str  # what was checked, e.g. "lazy mode"
    level: str  # OK | WARN | FAIL
    detail: str  # what was found, one line
    fix: str = ""  # one line; empty for OK

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"finding level must be one of {', '.join(LEVELS)}, got {self.level!r}")
        if self.level != OK and not self.fix:
            raise ValueError(f"a {self.level} finding needs a fix ({self.section}: {self.check})")


@dataclass(frozen=True)
class HostFacts:
    """What the launcher process reads about the host without importing any device framework."""

    cpus: tuple[int, ...]  # the affinity of this process
    governors: Mapping[str, int] = field(default_factory=dict)  # scaling_governor -> CPUs; {} = unknown
    memory_available: int | None = None
    memory_total: int | None = None
    environ: Mapping[str, str] = field(default_factory=dict)  # the variables that matter (HOST_ENV_VARS)
    allocator: str | None = None  # "glibc 2.36"; None where the C library is not glibc


HOST_ENV_VARS = (
    THREADS_ENV,
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    HEAP_ENV,
    *USER_MALLOC_ENV,
    "GLIBC_TUNABLES",
    "LD_PRELOAD",
)


@dataclass(frozen=True)
class DeviceFacts:
    """One accelerator kind as its ``doctor_facts`` hook saw it, in a child process.

    ``unavailable``: visible devices the process could not acquire, with why (e.g. held by another
    process); ``memory``: (device label, free bytes, total bytes); ``libraries``: name -> None when it
    loads, else the error; ``optional_missing``: libraries among them that are optional packages simply
    not installed (a warning, where a library that is there but fails is a failure); ``extra``: the
    accelerator's own facts, read only by its ``doctor_findings``.
    """

    accelerator: str
    present: bool
    count: int = 0
    names: tuple[str, ...] = ()
    absent_reason: str = ""  # why not present, e.g. "habana_frameworks is not installed"
    versions: Mapping[str, str] = field(default_factory=dict)
    libraries: Mapping[str, str | None] = field(default_factory=dict)
    optional_missing: tuple[str, ...] = ()
    memory: tuple[tuple[str, int, int], ...] = ()
    unavailable: tuple[tuple[str, str], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""  # the hook itself failed: the facts above are incomplete
    # What one telemetry reading costs (``hpubench.measure.telemetry.readcost.probe``), or "absent"/"error"
    # with why; {} where it was not probed.
    telemetry: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeviceFacts:
        return cls(
            accelerator=str(data["accelerator"]),
            present=bool(data["present"]),
            count=int(data.get("count", 0)),
            names=tuple(str(n) for n in data.get("names", ())),
            absent_reason=str(data.get("absent_reason", "")),
            versions={str(k): str(v) for k, v in dict(data.get("versions", {})).items()},
            libraries={
                str(k): (None if v is None else str(v)) for k, v in dict(data.get("libraries", {})).items()
            },
            optional_missing=tuple(str(n) for n in data.get("optional_missing", ())),
            memory=tuple((str(m[0]), int(m[1]), int(m[2])) for m in data.get("memory", ())),
            unavailable=tuple((str(u[0]), str(u[1])) for u in data.get("unavailable", ())),
            extra=dict(data.get("extra", {})),
            error=str(data.get("error", "")),
            telemetry=dict(data.get("telemetry", {})),
        )


def gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


# ---- host -------------------------------------------------------------------------------------------------
def governor_finding(governors: Mapping[str, int]) -> Finding:
    """``powersave`` holds the clock down, so CPU-bound steps (and every launch) measure slow."""
    check = "CPU frequency governor"
    if not governors:
        return Finding(HOST, check, OK, "unknown (no cpufreq scaling_governor in /sys: a VM or container)")
    shown = ", ".join(f"{g} ({n} CPUs)" for g, n in sorted(governors.items()))
    if "powersave" in governors:
        return Finding(
            HOST,
            check,
            WARN,
            f"{shown}: powersave holds the clock down, so timings measure the governor",
            "for benchmarking: sudo cpupower frequency-set -g performance (or write performance to "
            "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
        )
    return Finding(HOST, check, OK, shown)


def thread_findings(cpus: Sequence[int], environ: Mapping[str, str]) -> list[Finding]:
    """The CPU thread policy a cell would get (``hpubench.measure.conditions``) and the user's OpenMP/MKL
    caps."""
    out: list[Finding] = []
    try:
        policy = thread_policy(environ)
    except ValueError as exc:
        return [Finding(HOST, "thread policy", FAIL, str(exc), f"export {THREADS_ENV}=cores-1 (or unset it)")]
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        raw = environ.get(var, "").strip()
        if raw and not (raw.isdigit() and int(raw) > 0):
            out.append(
                Finding(
                    HOST, var, FAIL, f"{var}={raw!r} is not a positive integer", f"unset {var} or set a count"
                )
            )
    plan = plan_threads(policy, cpus, 1, 0, environ)
    threads = "torch's default (one per core)" if plan.threads is None else str(plan.threads)
    threads += " intra-op thread" + ("" if plan.threads == 1 else "s")
    source = "" if environ.get(THREADS_ENV, "").strip() else " (default)"
    detail = f"{THREADS_ENV}={policy}{source}: a one-rank cell gets {threads} on {len(cpus)} CPUs"
    if plan.policy != policy:  # the user's OMP_NUM_THREADS wins over the policy
        detail = f"{plan.policy} overrides {THREADS_ENV}={policy}; {len(cpus)} CPUs"
    out.insert(0, Finding(HOST, "threads", OK, detail))
    return out


def heap_finding(allocator: str | None, environ: Mapping[str, str]) -> Finding:
    """The heap policy a cell's processes would get (``hpubench.measure.heap``)."""
    check = "heap"
    try:
        policy = heap_policy(environ)
    except ValueError as exc:
        return Finding(HOST, check, FAIL, str(exc), f"unset {HEAP_ENV} (steady, the default)")
    user = user_allocator(environ)
    if user is not None:  # the user's own allocator setting wins (plan_heap sets nothing)
        return Finding(HOST, check, OK, f"{user}: the user's allocator setting, kept")
    if policy == "system":
        return Finding(
            HOST,
            check,
            WARN,
            f"{HEAP_ENV}=system: glibc moves its malloc thresholds as a process runs, so a CPU cell may draw "
            "a heap trimmed and regrown every step (page faults a step in its record)",
            f"unset {HEAP_ENV} (steady, the default)",
        )
    if allocator is None:
        return Finding(
            HOST,
            check,
            WARN,
            "the C library is not glibc: the steady heap policy cannot hold malloc's thresholds",
            "compare runs by their records' page faults a step; or run on a glibc Linux",
        )
    return Finding(
        HOST,
        check,
        OK,
        f"{HEAP_ENV}=steady (default): {allocator} malloc thresholds held "
        f"(mmap {MMAP_THRESHOLD // 2**20} MiB, trim {TRIM_THRESHOLD // 2**30} GiB)",
    )


def memory_finding(available: int | None, total: int | None) -> Finding:
    check = "host memory"
    if available is None or total is None or total <= 0:
        return Finding(HOST, check, OK, "unknown")
    detail = f"{gib(available)} free of {gib(total)}"
    if available < LOW_HOST_MEMORY_SHARE * total:
        return Finding(
            HOST,
            check,
            WARN,
            f"{detail}: little left for cells and their data",
            "stop other memory-heavy processes before benchmarking",
        )
    return Finding(HOST, check, OK, detail)


def host_findings(host: HostFacts) -> list[Finding]:
    return [
        governor_finding(host.governors),
        *thread_findings(host.cpus, host.environ),
        heap_finding(host.allocator, host.environ),
        memory_finding(host.memory_available, host.memory_total),
    ]


def torch_finding(torch_version: str | None, error: str | None) -> Finding:
    if torch_version:
        return Finding(TORCH, "torch", OK, f"torch {torch_version}")
    return Finding(
        TORCH,
        "torch",
        FAIL,
        f"torch could not be imported in a fresh process: {error or 'no result'}",
        "install torch in this Python environment (pip install torch, or your vendor's build)",
    )


# ---- devices (helpers for Accelerator.doctor_findings) ----------------------------------------------------
def device_findings(facts: DeviceFacts, library_fixes: Mapping[str, str] | None = None) -> list[Finding]:
    """What every accelerator reports alike: presence and names, versions, libraries, cards it could not
    acquire, free memory. ``library_fixes``: the fix line for a library that does not load."""
    sec = facts.accelerator
    if facts.error:
        return [
            Finding(
                sec,
                "facts",
                FAIL,
                f"gathering this accelerator's facts failed: {facts.error}",
                "check this device's framework install; report it to hpubench if the install is sound",
            )
        ]
    if not facts.present:
        return [Finding(sec, "devices", OK, f"none: {facts.absent_reason or 'not available'}")]
    names = ", ".join(sorted(set(facts.names))) or "name unknown"
    out = [Finding(sec, "devices", OK, f"{facts.count} x {names}")]
    if facts.versions:
        out.append(Finding(sec, "versions", OK, ", ".join(f"{k} {v}" for k, v in facts.versions.items())))
    for lib, error in facts.libraries.items():
        fix = (library_fixes or {}).get(lib, f"install or repair {lib}")
        if error is None:
            out.append(Finding(sec, lib, OK, "loads"))
        elif lib in facts.optional_missing:
            out.append(Finding(sec, lib, WARN, f"not installed (optional): {error}", fix))
        else:
            out.append(Finding(sec, lib, FAIL, f"does not load: {error}", fix))
    for device, why in facts.unavailable:
        out.append(
            Finding(
                sec,
                "device acquire",
                FAIL,
                f"{device} could not be acquired: {why}",
                "another process holds it: stop that process, or make the job use free devices",
            )
        )
    if facts.memory:
        out.append(Finding(sec, "device memory", OK, memory_text(facts.memory)))
    telemetry = telemetry_finding(sec, facts.telemetry)
    if telemetry is not None:
        out.append(telemetry)
    return out


def telemetry_finding(
    section: str, probe: Mapping[str, Any], interval_s: float = DEFAULT_TELEMETRY_INTERVAL_S
) -> Finding | None:
    """What the telemetry sampler will cost at the default interval, from one probe of its readings.

    The full readings alone, one every ``interval_s``, take ``full_cpu_s / interval_s`` of a core from
    the host (the energy-only polls between them stay within their own 1% budget); above 1% a host-bound
    cell can lose about that much of its speed. None where nothing was probed.
    """
    if not probe:
        return None
    if "absent" in probe:
        return Finding(section, "telemetry", OK, f"none: {probe['absent']}")
    if "error" in probe:
        return Finding(
            section,
            "telemetry",
            WARN,
            f"a reading failed: {probe['error']}",
            "cells will record telemetry as absent with this reason; repair the library to get power figures",
        )
    cpu_s = float(probe["full_cpu_s"])
    share = 100.0 * cpu_s / interval_s
    ms, pct, fits = _two_digits(cpu_s * 1e3), _two_digits(share), _two_digits(cpu_s / 0.002)
    detail = (
        f"{probe['source']}: a reading takes {ms} ms of CPU, {pct}% of a core at the default "
        f"--telemetry-interval {interval_s:g}"
    )
    if share < SAMPLER_NOTE_PCT:  # the bound above which a cell's record notes what its sampler cost
        return Finding(section, "telemetry", OK, detail)
    return Finding(
        section,
        "telemetry",
        WARN,
        detail + "; host-bound cells (tiny models, launch-bound GPU steps) can lose about that much",
        f"where their speed matters more than power figures: --telemetry-interval {fits} "
        "(0.2% of a core) or --no-telemetry",
    )


def _two_digits(x: float) -> str:
    """Two significant digits, never in exponent form (120, not 1.2e+02)."""
    return f"{float(f'{x:.2g}'):g}"


def memory_text(memory: Sequence[tuple[str, int, int]]) -> str:
    """One line for any number of devices: alike devices collapse into one figure."""
    if len(memory) > 1 and len({(free, total) for _, free, total in memory}) == 1:
        _, free, total = memory[0]
        return f"{len(memory)} devices, each {gib(free)} free of {gib(total)}"
    return "; ".join(f"{label}: {gib(free)} free of {gib(total)}" for label, free, total in memory)


# ---- plan -------------------------------------------------------------------------------------------------
def plan_findings(
    matrix_name: str,
    total: int,
    runnable: int,
    reasons: Iterable[tuple[str, int]],
    memory: Iterable[tuple[str, str]] = (),
    memory_problem: str | None = None,
) -> list[Finding]:
    """Which cells of the matrix would be skipped here, and why: the rules' reasons with their counts
    (``hpubench.plan.matrix.explain``), then each cell whose memory estimate does not fit, by its key
    (``memory``: key, reason; ``runnable`` counts neither). ``memory_problem``: why memory was not checked.

    A skip is no fault: lazy mode on a GPU is meant to be skipped. Only a matrix with nothing to run is.
    """
    head = f"--matrix {matrix_name}: {total} cells, {runnable} would run, {total - runnable} skipped"
    if total and not runnable:
        out = [
            Finding(PLAN, "cells", FAIL, head, "see the device findings above: no device here can run them")
        ]
    else:
        out = [Finding(PLAN, "cells", OK, head)]
    out += [Finding(PLAN, "skipped", OK, f"{n} x {reason}") for reason, n in reasons]
    out += [Finding(PLAN, "memory fit", OK, f"{key}: {reason}") for key, reason in memory]
    if memory_problem:
        out.append(
            Finding(
                PLAN,
                "memory fit",
                WARN,
                f"not checked: {memory_problem}",
                "run hpubench list cells for the estimates, or fix the workload the probe could not count",
            )
        )
    return out


# ---- outcome ----------------------------------------------------------------------------------------------
def exit_code(findings: Iterable[Finding]) -> int:
    """1 when any finding FAILs, else 0 (warnings do not fail the command)."""
    return 1 if any(f.level == FAIL for f in findings) else 0


def sections(findings: Iterable[Finding]) -> list[str]:
    """Section names in first-seen order."""
    return list(dict.fromkeys(f.section for f in findings))


def to_json(findings: Sequence[Finding], facts: Mapping[str, Any]) -> str:
    counts = {lvl: sum(f.level == lvl for f in findings) for lvl in LEVELS}
    doc = {
        "exit_code": exit_code(findings),
        "counts": counts,
        "sections": sections(findings),
        "findings": [asdict(f) for f in findings],
        "facts": facts,
    }
    return json.dumps(doc, indent=2, sort_keys=False, default=str)


def text_lines(findings: Sequence[Finding]) -> list[str]:
    """Human output: one line per finding, its fix on the next; a summary line last."""
    lines: list[str] = []
    for sec in sections(findings):
        lines.append(f"{sec}:")
        for f in (f for f in findings if f.section == sec):
            lines.append(f"  [{f.level:<4}] {f.check}: {f.detail}")
            if f.fix:
                lines.append(f"         fix: {f.fix}")
    n_fail = sum(f.level == FAIL for f in findings)
    n_warn = sum(f.level == WARN for f in findings)
    lines.append(f"{n_fail} FAIL, {n_warn} WARN, {len(findings) - n_fail - n_warn} OK")
    return lines
