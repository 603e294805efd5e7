"""The typed runtime record: attributes for readers, nothing lost on a round trip."""

from __future__ import annotations

import pytest

from hpubench.store.runtimeinfo import RuntimeInfo


def test_known_facts_are_attributes_and_unknown_keys_survive_a_round_trip() -> None:
    raw = {"device_name": "GAUDI2", "batch_size": 32, "threads": {"intra_op": 1}, "vendor_fact": [1, 2]}
    rt = RuntimeInfo.from_dict(raw)
    assert (rt.device_name, rt.batch_size, rt.threads) == ("GAUDI2", 32, {"intra_op": 1})
    assert rt.extra == {"vendor_fact": [1, 2]}
    assert rt.to_dict() == raw
    with pytest.raises(AttributeError):
        rt.device  # noqa: B018 - a misspelt fact is an error where it is read, not a silent None


def test_it_reads_as_the_mapping_it_writes() -> None:
    rt = RuntimeInfo(mode_in_force="lazy", interference=0.02)
    assert rt["mode_in_force"] == "lazy" and rt.get("steps_stop") is None and "device_name" not in rt
    assert dict(rt) == {"mode_in_force": "lazy", "interference": 0.02}
    assert rt == {"mode_in_force": "lazy", "interference": 0.02}


def test_with_facts_copies() -> None:
    rt = RuntimeInfo(accelerator="cpu")
    out = rt.with_facts(distributed={"backend": "gloo"}, new_key=1)
    assert rt.distributed is None and out.distributed == {"backend": "gloo"} and out.extra == {"new_key": 1}
