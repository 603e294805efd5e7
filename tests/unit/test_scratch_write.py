"""write_json_atomic(durable=False): a cell child's result file, read back at once by its live parent.

Still whole or absent to a reader (temp + rename), but no fsync: two forced writes to disk cost 1-4 ms
of every cell on this machine's disk and protect nothing a live parent needs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hpubench.store import rundir


def test_scratch_write_is_whole_and_not_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    target = tmp_path / "result.json"
    rundir.write_json_atomic(target, {"a": [1, 2, 3]}, indent=None, durable=False)
    assert json.loads(target.read_text()) == {"a": [1, 2, 3]}
    assert synced == []
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temp file left


def test_durable_write_syncs_file_and_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    rundir.write_json_atomic(tmp_path / "meta.json", {"b": 1})
    assert len(synced) == 2  # the file, then its directory


def test_scratch_write_full_disk_no_half_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "result.json"
    target.write_text('{"old": true}\n')

    def full(self: Path, *a: object, **k: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError):
        rundir.write_json_atomic(target, {"new": True}, indent=None, durable=False)
    with open(target) as f:
        assert json.loads(f.read()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
