"""Which share of a matrix one machine runs: ``hpubench run --shard K/N``, a Slurm job array or a
Kubernetes Indexed Job.

Pure: no torch, no I/O (the environment comes in as a mapping).

Numbering. ``K/N`` is 1-based: ``--shard 1/3``, ``2/3`` and ``3/3`` together run the whole matrix, and
``1/1`` is the whole matrix (the way to run everything inside an array task). From Slurm, when
``--shard`` is absent and ``SLURM_ARRAY_TASK_ID`` is set, ``N = SLURM_ARRAY_TASK_COUNT`` and
``K = (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP + 1``: whatever range the
user's ``--array`` gives (``0-2``, ``1-3``, ``10-14``, ``0-8:4``), its first task is shard 1. A list of
ids with gaps (``--array=1,4,9``) cannot be numbered that way and is refused with the fix. From Kubernetes,
an Indexed Job gives each pod ``JOB_COMPLETION_INDEX`` (0-based) but not the count, so the Job says it in
``HPUBENCH_SHARD_COUNT`` (its ``completions``): ``K = JOB_COMPLETION_INDEX + 1``. A pod that is retried keeps
its index, so it runs the same shard (``docs/kubernetes.md``).

The partition. Every task of an array computes the partition on its own, and they must all compute the
same one: a cell two tasks both think is theirs is measured twice (and ``results merge`` refuses the two
different records), a cell no task takes is never measured. So the cost a cell is weighted by must not be
measured on the machine: a calibrated rate differs between nodes (and between two probes on one node),
and so would the partition. :func:`partition` therefore takes integer costs that the caller derives from
facts that are the same on every task running the same command with the same software: the model's
FLOPs and operators counted on ``meta`` at a fixed nominal rate (``hpubench.run.shardplan``), and the cell
keys for tie-breaking. Integer costs (milliseconds) keep float rounding out of the comparison.

Longest processing time first: cells sorted by cost, largest first (equal costs by cell key), each put
into the shard with the least cost so far (equal loads: fewer cells, then the lower shard number). Its
makespan is within 4/3 of the best possible; for a benchmark matrix, whose few big cells dominate, it is
usually within a few percent of the even share.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hpubench.errors import UsageError

_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
MAX_SHARDS = 100_000
SLURM_ID = "SLURM_ARRAY_TASK_ID"
SLURM_COUNT = "SLURM_ARRAY_TASK_COUNT"
SLURM_MIN = "SLURM_ARRAY_TASK_MIN"
SLURM_MAX = "SLURM_ARRAY_TASK_MAX"
SLURM_STEP = "SLURM_ARRAY_TASK_STEP"
K8S_INDEX = "JOB_COMPLETION_INDEX"  # set by Kubernetes in every pod of an Indexed Job
K8S_COUNT = "HPUBENCH_SHARD_COUNT"  # set by the Job's manifest: its completions


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based), and where that came from (``--shard`` or the env)."""

    index: int
    count: int
    source: str

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, source: str = "--shard") -> Shard:
    """``"2/3"`` -> Shard(2, 3); anything else is a UsageError naming the fix."""
    m = _SHARD_RE.match(text or "")
    if not m:
        raise UsageError(f"{source} takes K/N, e.g. 2/3 (shard 2 of 3, numbered from 1), got {text!r}")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or n > MAX_SHARDS:
        raise UsageError(f"{source} {text!r}: N must be between 1 and {MAX_SHARDS}, e.g. 1/3")
    if not 1 <= k <= n:
        raise UsageError(f"{source} {text!r}: K must be between 1 and N={n} (shards are numbered from 1)")
    return Shard(k, n, source)


def _int_var(environ: Mapping[str, str], name: str, default: int | None = None, by: str = SLURM_ID) -> int:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        if default is not None:
            return default
        where = "a Slurm job array" if by == SLURM_ID else f"set {name} to the Job's completions"
        raise UsageError(f"{by} is set but {name} is not; fix: {where}, or give --shard K/N")
    try:
        return int(raw.strip())
    except ValueError:
        raise UsageError(f"{name}={raw!r} is not a whole number; fix: unset it or give --shard K/N") from None


def shard_from_env(environ: Mapping[str, str]) -> Shard | None:
    """The shard of this Slurm array task or Kubernetes Indexed Job pod, or None outside both (see the
    module docstring)."""
    slurm, k8s = ((environ.get(v) or "").strip() for v in (SLURM_ID, K8S_INDEX))
    if slurm and k8s:
        raise UsageError(
            f"both {SLURM_ID} and {K8S_INDEX} are set, so the shard is ambiguous; fix: give --shard K/N"
        )
    if k8s:
        return _indexed_job(environ)
    if not slurm:  # unset, or set empty: not an array task
        return None
    task = _int_var(environ, SLURM_ID)
    count = _int_var(environ, SLURM_COUNT)
    first = _int_var(environ, SLURM_MIN, default=task if count == 1 else None)
    step = _int_var(environ, SLURM_STEP, default=1)
    last = _int_var(environ, SLURM_MAX, default=first + (count - 1) * step)
    if count < 1 or step < 1:
        raise UsageError(
            f"{SLURM_COUNT}={count}, {SLURM_STEP}={step}: not a job array; fix: give --shard K/N"
        )
    if count > MAX_SHARDS:
        raise UsageError(f"{SLURM_COUNT}={count}: more than {MAX_SHARDS} shards; fix: give --shard K/N")
    if last != first + (count - 1) * step:
        raise UsageError(
            f"the job array's ids ({first}..{last}, {count} tasks) are a list with gaps, which cannot be "
            "numbered as shards; fix: submit with a range such as --array=0-"
            + f"{count - 1}, or give --shard K/N"
        )
    offset = task - first
    if offset < 0 or offset % step or offset // step >= count:
        raise UsageError(
            f"{SLURM_ID}={task} is outside the array {first}-{last}:{step}; fix: give --shard K/N"
        )
    return Shard(offset // step + 1, count, f"{SLURM_ID}={task} of {first}-{last}")


def _indexed_job(environ: Mapping[str, str]) -> Shard:
    index = _int_var(environ, K8S_INDEX, by=K8S_INDEX)
    count = _int_var(environ, K8S_COUNT, by=K8S_INDEX)
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(
            f"{K8S_COUNT}={count} cannot be a Job's completions; fix: set it to them (1-{MAX_SHARDS}), "
            "or give --shard K/N"
        )
    if not 0 <= index < count:
        raise UsageError(
            f"{K8S_INDEX}={index} is outside the Job's {count} completions ({K8S_COUNT}); fix: set "
            f"{K8S_COUNT} to the Job's completions, or give --shard K/N"
        )
    return Shard(index + 1, count, f"{K8S_INDEX}={index} of {count}")


def resolve(option: str | None, environ: Mapping[str, str]) -> Shard | None:
    """``--shard`` where given (the environment is then not read), else a Slurm array's task or an Indexed
    Job's pod, else None. ``1/1`` means the whole matrix."""
    shard = parse_shard(option) if option is not None else shard_from_env(environ)
    return None if shard is not None and shard.count == 1 else shard


def partition(costs: Sequence[tuple[str, int]], n: int) -> list[int]:
    """The shard (1-based) of each ``(key, cost)``, by longest-processing-time-first (module docstring).

    Deterministic: the result depends only on the keys, the integer costs and ``n``, never on the input
    order of equal items. Keys must be unique."""
    if n < 1:
        raise ValueError("n must be at least 1")
    order = sorted(range(len(costs)), key=lambda i: (-max(0, costs[i][1]), costs[i][0]))
    load = [0] * n
    count = [0] * n
    out = [0] * len(costs)
    for i in order:
        b = min(range(n), key=lambda j: (load[j], count[j], j))
        load[b] += max(0, costs[i][1])
        count[b] += 1
        out[i] = b + 1
    return out


def digest(keys: Sequence[str], shards: Sequence[int], n: int) -> str:
    """A short fingerprint of a whole partition: shards that computed the same one agree on it."""
    h = hashlib.sha256(f"{n}\n".encode())
    for key, s in sorted(zip(keys, shards, strict=True)):
        h.update(f"{s}\t{key}\n".encode())
    return h.hexdigest()[:16]


def loads(costs: Sequence[int], shards: Sequence[int], n: int) -> list[int]:
    """Total cost per shard (index 0 is shard 1)."""
    out = [0] * n
    for c, s in zip(costs, shards, strict=True):
        out[s - 1] += max(0, c)
    return out
