"""``hf:`` workloads through the real CLI: without transformers the cells are skipped with the reason and
the install command; with it (the ``hf`` extra), tiny gpt2, bert and llama configurations train, a local
``config.json`` directory works, and ``--option`` changes the model's dimensions per cell."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(
    not HAVE_TRANSFORMERS, reason="transformers is not installed (pip install 'hpubench[hf]')"
)


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines() if line.strip()]


def _without_transformers(tmp_path: Path) -> dict[str, str]:
    """An environment where transformers cannot be imported, installed or not: a ``sitecustomize`` first
    on the path puts a finder before every other that refuses it, as on a machine without the extra."""
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    blocker = tmp_path / "no_transformers"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'transformers' or name.startswith('transformers.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    return {"PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT), *paths])}


def test_without_transformers_hf_cells_are_skipped_with_the_install_command(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = _without_transformers(tmp_path)
    proc = run_cli(
        "run", "-w", "hf:gpt2,hf:llama", "-a", "cpu", "--steps", "3", "--out", str(out), cwd=ROOT, env=env
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    records = _records(out)
    assert [r["cell"]["workload"] for r in records] == ["hf:gpt2", "hf:llama"]
    for r in records:
        assert r["status"] == "skipped"
        assert "transformers is not installed" in r["reason"] and "hpubench[hf]" in r["reason"]
    assert "hpubench[hf]" in proc.stdout  # the table shows the reason as written, brackets included
    listed = run_cli("list", "workloads", cwd=ROOT, env=env)
    assert "hf:llama: tiny, standard" in listed.stdout.splitlines()  # a name, never an emoji code


def test_all_workloads_leave_the_hf_family_out() -> None:
    proc = run_cli("list", "cells", "-w", "all", "-a", "cpu", "--skipped", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "llama/tiny/cpu" in proc.stdout and "hf:" not in proc.stdout


@needs_transformers
@pytest.mark.slow
def test_tiny_gpt2_bert_and_llama_configurations_train(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = run_cli("run", "-w", "hf:gpt2,hf:bert,hf:llama", "--size", "tiny", "-a", "cpu", "--steps", "3",
                   "--out", str(out), cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    records = {r["cell"]["workload"]: r for r in _records(out)}
    assert set(records) == {"hf:gpt2", "hf:bert", "hf:llama"}
    for name, r in records.items():
        assert r["status"] == "ok", (name, r["reason"], r["traceback_tail"])
        m = r["metrics"]
        assert m["samples_per_s"] > 0 and m["tokens_per_step"] == 8 * 64 and m["flops_per_step"] > 0
        assert 5.5 < m["loss_first"] < 8.0, (name, m["loss_first"])  # ~ln(1024) = 6.9 at init


@needs_transformers
@pytest.mark.slow
def test_a_config_directory_and_per_cell_dimension_options(tmp_path: Path) -> None:
    model = tmp_path / "my-model"
    model.mkdir()
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 32,
              "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
              "intermediate_size": 64, "vocab_size": 256, "max_position_embeddings": 256}  # fmt: skip
    (model / "config.json").write_text(json.dumps(config))
    out = tmp_path / "run"
    proc = run_cli("run", "-w", f"hf:{model}", "--size", "standard", "-a", "cpu", "--steps", "3",
                   "--option", "seq_len=16", "--option", "num_hidden_layers=2", "--out", str(out),
                   cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (r,) = _records(out)
    assert r["status"] == "ok", (r["reason"], r["traceback_tail"])
    assert r["cell"]["workload"] == "hf:my-model"
    assert r["metrics"]["tokens_per_step"] == 4 * 16
    # Two layers of d=32 (1 KV head of 16) and a 256 x 32 head: 2 * (2*32*32 + 2*32*16 + 3*32*64) + 32*256.
    n = 2 * (2 * 32 * 32 + 2 * 32 * 16 + 3 * 32 * 64) + 32 * 256
    tokens = 4 * 16
    analytic = 6 * n * tokens + 12 * 2 * 16 * 32 * tokens
    assert r["metrics"]["flops_per_step"] == pytest.approx(analytic, rel=0.02)


def test_a_directory_without_config_json_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = run_cli("run", "-w", f"hf:{tmp_path}", "--steps", "3", "--out", str(tmp_path / "o"), cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "holds no config.json" in proc.stderr, proc.stderr
    assert not (tmp_path / "o").exists()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
