"""The estimate probe's count cache must not outlive what the model is built from: for a transformers
model directory that is its config.json, not only the source file of the workload class."""

from __future__ import annotations

import json
from pathlib import Path

from hpubench.run import probe
from workloads import hf


def test_an_edited_config_json_changes_the_cache_digest(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 32}))
    before = probe.source_digest(hf.class_for_directory(str(model))())
    assert before == probe.source_digest(hf.class_for_directory(str(model))())  # stable while unchanged
    (model / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    assert probe.source_digest(hf.class_for_directory(str(model))()) != before
