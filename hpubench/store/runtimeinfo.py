"""What a cell's live run read back about itself, as a typed record: ``CellResult.runtime``.

The worker gathers these facts as it goes (device, mode in force, threads, compiles, why measuring
stopped, ...) and the record keeps them as a ``RuntimeInfo``: readers use attributes, so a misspelt fact
is an error where it is read instead of a silent ``None``. Facts with an inner structure of their own
(threads, distributed, compile details) stay mappings, typed at the top.

On disk the runtime is the same JSON object as in record schema 1, one key per field; a key this version
does not know (written by a newer hpubench, or by a plugin) is kept in ``extra`` and written back, so
reading and rewriting a record loses nothing. For code that still reads by key, the record is also a
read-only mapping of exactly what is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

Facts = Mapping[str, Any]


@dataclass(frozen=True, eq=True)
class RuntimeInfo(Mapping[str, Any]):
    # where it ran
    accelerator: str | None = None
    device_name: str | None = None
    device_index: int | None = None
    strategy: str | None = None
    world_size: int | None = None
    software: Facts | None = None  # versions: torch, the device framework
    env_flags: Facts | None = None  # environment flags that change the device's behaviour
    threads: Facts | None = None  # intra/inter-op threads, wait policy, affinity, load, policy
    heap: Facts | None = None  # host malloc policy and the thresholds set (hpubench.measure.heap)
    condition: Facts | None = None  # tuned or plain host condition, in words (hpubench.run.hostcondition)
    distributed: Facts | None = None  # backend, ranks, per-rank figures, launch facts
    trainer: Facts | None = None  # a framework's Trainer ran the steps (hpubench.integrations): which, how
    # what ran
    batch_size: int | None = None  # per device, resolved
    precision: Facts | None = None  # parameters dtype, autocast, scaler, fp8
    mode_requested: str | None = None
    mode_in_force: str | None = None
    compile: Facts | None = None
    graphs: str | None = None  # the graph capture in force, by name (inside torch.compile or not)
    extra_work: Facts | None = None
    run_options: Facts | None = None
    # how it was measured
    steps_stop: str | None = None
    steps_auto: Facts | None = None
    warmup_extended: str | None = None
    warmup_stop: str | None = None  # why the warm-up ended (hpubench.plan.autosteps.WarmupRule)
    warmup_compiles: Facts | None = None  # its steps, seconds and compile events
    timing: str | None = None
    interference: float | None = None
    interference_detail: Facts | None = None
    run_queue_wait: float | None = None  # busy threads' run-queue wait share (schedstat)
    run_queue_detail: Facts | None = None
    page_faults_measured: Facts | None = None  # minor/major faults of the measuring process in the window
    compiles_measured: int | None = None
    compile_counter: str | None = None
    compile_detail: Facts | None = None
    partial: Facts | None = None
    budget: Facts | None = None
    memory_timeline_error: str | None = None
    # what the numerics verdict was computed from: the first losses, the 32-true eager reference's, its key
    # and cost, computed or cached (hpubench.run.cellrun.reference)
    numerics: Facts | None = None
    # what it cost
    flops_count_s: float | None = None
    flops_counted: str | None = None
    flops_per_device_step: int | None = None
    flops_conv_share: float | None = None  # of those, in convolutions (where a device runs them apart)
    setup_s: float | None = None
    dispatch_to_first_step_s: float | None = None
    # keys this version does not know, kept as read
    extra: Facts = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> RuntimeInfo:
        """From the JSON object (record schema 1 or 2) or the worker's gathered facts."""
        if isinstance(data, RuntimeInfo):
            return data
        known = _FIELDS
        d = dict(data or {})
        extra = {k: v for k, v in d.items() if k not in known}
        return cls(**{k: v for k, v in d.items() if k in known}, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written: the facts present (None left out) and the unknown keys as read."""
        out = {f: getattr(self, f) for f in _FIELDS if getattr(self, f) is not None}
        return {**out, **self.extra}

    def with_facts(self, **facts: Any) -> RuntimeInfo:
        """A copy with these facts set (an unknown name goes to ``extra``)."""
        known = {k: v for k, v in facts.items() if k in _FIELDS}
        other = {k: v for k, v in facts.items() if k not in _FIELDS}
        out = replace(self, **known)
        return replace(out, extra={**self.extra, **other}) if other else out

    # read-only mapping of what is written (code and records that read by key)
    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RuntimeInfo):
            return self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return self.to_dict() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # holds mappings: not hashable


# In declaration order: a record's runtime object lists its facts the same way in every process (a set
# iterated in hash order did not).
_FIELDS = tuple(f.name for f in fields(RuntimeInfo) if f.name != "extra")


def field_kinds() -> dict[str, str]:
    """Each fact's JSON kind (``str``, ``int``, ``float`` or ``Facts``, an object), from the declaration
    above: what :mod:`hpubench.store.recordcheck` checks a record's runtime against."""
    return {f.name: str(f.type).split(" | ")[0] for f in fields(RuntimeInfo) if f.name != "extra"}
