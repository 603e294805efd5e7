"""``-w lightning:FILE.py:CLASS`` refused with one line and exit 2, nothing written, for every way the
module cannot be benchmarked; and both integrations without their package, saying what to install."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
HAVE_LIGHTNING = importlib.util.find_spec("pytorch_lightning") is not None
pytestmark = pytest.mark.slow

MODULES = """
import torch
import pytorch_lightning as pl


class NoData(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 2)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class NeedsArgs(NoData):
    def __init__(self, width):
        super().__init__()


class Words(NoData):
    def train_dataloader(self):
        return [["a", "b"]]
"""

CASES = [
    ("mods.py:Nope", "no LightningModule named 'Nope' (it defines NeedsArgs, NoData, Words)"),
    ("mods.py:NoData", "no batch: train_dataloader() failed"),
    ("mods.py:NeedsArgs", "NeedsArgs() failed: TypeError"),
    ("mods.py:Words", "its batches hold str, str; hpubench moves batches of tensors only"),
]
# Every case's message from the loader every process uses, in one interpreter (Lightning imports once).
LOAD_ALL = """
import json, os, sys
from hpubench.errors import UsageError
from workloads import lightning
out = {}
for ref in sys.argv[1:]:
    path, cls = ref.rsplit(":", 1)
    try:
        lightning.load(f"lightning:{os.path.abspath(path)}:{cls}")
        out[ref] = None
    except UsageError as exc:
        out[ref] = str(exc)
print(json.dumps(out))
"""


@pytest.mark.skipif(not HAVE_LIGHTNING, reason="pytorch-lightning is not installed")
def test_a_module_that_cannot_be_benchmarked_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "mods.py").write_text(MODULES)
    argv = [sys.executable, "-c", LOAD_ALL, *(ref for ref, _ in CASES)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    for ref, fragment in CASES:
        assert said[ref] is not None and "\n" not in said[ref] and fragment in said[ref], (ref, said[ref])
    # and through the CLI: the same line, exit 2, nothing written (the plan-level forms: unit tests)
    proc = run_cli("run", "-w", "lightning:mods.py:Words", "--steps", "3", "--out", "out", cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), proc.stderr[-2000:]
    assert CASES[3][1] in lines[0] and "Traceback" not in proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists()


def _blocking(tmp_path: Path, names: tuple[str, ...]) -> dict[str, str]:
    """An environment where ``names`` cannot be imported, as on a machine without the extra."""
    blocker = tmp_path / "block"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {names!r}:\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)])}


def test_without_the_packages_each_integration_names_its_install(tmp_path: Path) -> None:
    env = _blocking(tmp_path, ("lightning", "pytorch_lightning", "transformers"))
    for module, install in (("lightning", "hpubench[lightning]"), ("transformers", "hpubench[hf]")):
        code = f"import hpubench.integrations.{module}"
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert proc.returncode == 1 and install in proc.stderr.strip().splitlines()[-1], proc.stderr[-1500:]
    (tmp_path / "lit_mlp.py").write_text((ROOT / "docs" / "examples" / "lit_mlp.py").read_text())
    proc = subprocess.run(
        [sys.executable, "-m", "hpubench", "run", "-w", "lightning:lit_mlp.py:LitMLP", "--out", "o"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "hpubench[lightning]" in proc.stderr, proc.stderr[-1500:]
    assert len(proc.stderr.strip().splitlines()) == 1
