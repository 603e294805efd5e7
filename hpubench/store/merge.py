"""Several run directories made into one result set (``hpubench results merge``): the shards of a matrix.

Pure: the inputs' records and metadata in, the merged records, metadata and notes out; reading and
writing is ``hpubench.store.mergerun``.

Records are identified as the store identifies them, by (cell key, repeat). The same record in two inputs
(byte-identical, e.g. one shard given twice) is kept once. Two *different* records of one (key, repeat)
are refused with the key and both inputs named: which measurement is right is the user's call (a shard
run twice, two array tasks that computed different partitions), never a silent pick.

Every input's metadata is kept whole under ``merged.sources`` (each host's inventory, command line, git
commit and shard), and the top level stays a run's metadata so every reader (report, compare, gate,
baseline save) takes the merged directory as a run: hostname lists every host, started_at is the
earliest start, git is the inputs' commit (a note says when they differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hpubench.errors import UsageError
from hpubench.store.record import CellResult
from hpubench.store.rundir import record_line


@dataclass(frozen=True)
class Source:
    """One input: where it is, its meta.json (None where it has none) and its records (latest per run)."""

    path: str
    meta: dict[str, Any] | None
    records: tuple[CellResult, ...]


@dataclass(frozen=True)
class Merged:
    records: tuple[CellResult, ...]
    origins: tuple[int, ...]  # for each record, the index of the source it was taken from
    duplicates: int  # identical records dropped
    meta: dict[str, Any]
    notes: tuple[str, ...]


def _label(rid: tuple[str, int]) -> str:
    return rid[0] if rid[1] == 0 else f"{rid[0]} (repeat {rid[1]})"


def combine_records(sources: Sequence[Source]) -> tuple[list[CellResult], list[int], int]:
    """Records of every source in input order, identical duplicates dropped; a conflict is a UsageError."""
    kept: dict[tuple[str, int], tuple[bytes, int]] = {}
    out: list[CellResult] = []
    origins: list[int] = []
    duplicates = 0
    for i, src in enumerate(sources):
        for r in src.records:
            line = record_line(r)
            seen = kept.get(r.run_id)
            if seen is None:
                kept[r.run_id] = (line, i)
                out.append(r)
                origins.append(i)
            elif seen[0] == line:
                duplicates += 1
            else:
                raise UsageError(
                    f"cell {_label(r.run_id)} has different records in {sources[seen[1]].path} and "
                    f"{src.path}; fix: leave one of them out of the merge (or delete the stale line from "
                    "its cells.jsonl)"
                )
    return out, origins, duplicates


def _distinct(values: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out


def shard_notes(sources: Sequence[Source], present_keys: set[str]) -> list[str]:
    """What the inputs' shard records say about coverage: partitions that disagree, shards not given,
    cells of the partition that no input holds."""
    shards = [(s.path, (s.meta or {}).get("shard")) for s in sources]
    shards = [(p, sh) for p, sh in shards if isinstance(sh, dict)]
    if not shards:
        return []
    notes: list[str] = []
    digests = _distinct([sh.get("digest") for _, sh in shards])
    counts = _distinct([sh.get("count") for _, sh in shards])
    if len(digests) > 1 or len(counts) > 1:
        notes.append(
            "the shards computed different partitions (different matrices, software or N): a cell may "
            "be in none of them; check the cell counts below"
        )
    first = shards[0][1]
    count = first.get("count")
    given = {sh.get("index") for _, sh in shards if sh.get("count") == count}
    absent = [k for k in range(1, int(count or 0) + 1) if k not in given]
    if absent:
        notes.append(
            f"shard(s) {', '.join(f'{k}/{count}' for k in absent)} not among the inputs: their cells are "
            "missing from the merged results"
        )
    partition = first.get("partition") or []
    missing = [k for k, s in partition if k not in present_keys and s in given]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        notes.append(f"{len(missing)} cell(s) of the given shards have no record (runs cut short?): {shown}")
    return notes


def merged_meta(
    sources: Sequence[Source], argv: Sequence[str], merged_at: str
) -> tuple[dict[str, Any], list[str]]:
    """The merged directory's meta.json and the notes a reader must see (different commits, hardware)."""
    metas = [s.meta or {} for s in sources]
    base = dict(next((m for m in metas if m), {}))
    base.pop("shard", None)
    base.pop("merged", None)
    hosts = _distinct([h for m in metas for h in _hosts(m)])
    notes: list[str] = []
    commits = _distinct([(m.get("git") or {}).get("commit") for m in metas])
    if len(commits) > 1:
        shown = ", ".join(c[:10] for c in commits)
        notes.append(f"the inputs ran {len(commits)} different git commits: {shown}")
    if len(_distinct([_hardware(m.get("inventory")) for m in metas if m.get("inventory")])) > 1:
        notes.append("the inputs detected different hardware (see merged.sources in meta.json)")
    starts = sorted(str(m["started_at"]) for m in metas if m.get("started_at"))
    base.update(
        hostname=", ".join(hosts) if hosts else base.get("hostname"),
        command_line=list(argv),
        started_at=starts[0] if starts else merged_at,
        merged={
            "merged_at": merged_at,
            "hosts": hosts,
            "sources": [{"path": s.path, "records": len(s.records), "meta": s.meta} for s in sources],
        },
    )
    return base, notes


def _hardware(inventory: Any) -> Any:
    """What devices an inventory names (count and name per accelerator): free memory varies, hardware not."""
    if not isinstance(inventory, dict):
        return inventory
    return sorted(
        (acc, d.get("count"), d.get("device_name")) for acc, d in inventory.items() if isinstance(d, dict)
    )


def _hosts(meta: dict[str, Any]) -> list[str]:
    inner = meta.get("merged")
    if isinstance(inner, dict) and isinstance(inner.get("hosts"), list):
        return [str(h) for h in inner["hosts"]]  # a merged directory merged again keeps its hosts
    return [str(meta["hostname"])] if meta.get("hostname") else []


def combine(sources: Sequence[Source], argv: Sequence[str], merged_at: str) -> Merged:
    """Everything ``results merge`` writes, decided before anything is written."""
    if not sources:
        raise UsageError("give at least one run directory to merge")
    records, origins, duplicates = combine_records(sources)
    meta, notes = merged_meta(sources, argv, merged_at)
    notes += shard_notes(sources, {r.key for r in records})
    return Merged(tuple(records), tuple(origins), duplicates, meta, tuple(notes))
