"""The HPU rules are pure: they decide the matrix on machines without Gaudi, so they are tested without it."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpubench.accelerators import fork_server_env, get
from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.accelerators.hpu.rules import (
    FP32_LIST_ENV,
    LOWER_LIST_ENV,
    gaudi_generation,
    validate_op_list_env,
)
from hpubench.errors import UsageError
from hpubench.plan.cell import MODES, PRECISIONS, Cell

FAKES = Path(__file__).resolve().parents[1] / "fakes"
DEVICE_NAMES = ("GAUDI", "GAUDI2", "GAUDI2B", "GAUDI3", "")
OP_LIST_VARS = (LOWER_LIST_ENV, FP32_LIST_ENV, "LOWER_LIST", "FP32_LIST")


def _cell(precision: str = "32-true", mode: str = "lazy", graphs: bool = False) -> Cell:
    return Cell(workload="mlp", accelerator="hpu", precision=precision, mode=mode, graphs=graphs)


@pytest.fixture
def no_op_lists(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in OP_LIST_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_registered_with_its_identity() -> None:
    cls = get("hpu")
    assert cls is HPUAccelerator
    assert (cls.name, cls.dist_backend, cls.autocast_device_type) == ("hpu", "hccl", "hpu")
    assert cls.auto_priority == 20
    assert cls.graph_capture_name == "HPU graphs"
    assert HPUAccelerator().compile_backend() == "hpu_backend"
    assert HPUAccelerator().grad_scaler() is None


@pytest.mark.parametrize(
    ("name", "generation"),
    [
        ("GAUDI", 1),
        ("GAUDI2", 2),
        ("GAUDI2B", 2),
        ("GAUDI2C", 2),
        ("GAUDI2D", 2),
        ("GAUDI3", 3),
        ("gaudi2 ", 2),
        ("", None),
        ("NVIDIA H100", None),
    ],
)
def test_generation_from_name(name: str, generation: int | None) -> None:
    assert gaudi_generation(name) == generation


def _expected_rule(name: str, precision: str, mode: str, graphs: bool) -> str | None:
    """The decision table from hpu-api.md, written out independently of the implementation."""
    first_gen = name == "GAUDI"
    if first_gen and precision == "fp8":
        return "fp8"
    if first_gen and precision == "16-mixed":
        return "16-mixed"
    if graphs and mode == "compile":
        return "graphs+compile"
    if graphs and mode == "eager":
        return "graphs need lazy"
    if graphs and first_gen:
        return "graphs first-gen"
    return None


# What a reason must mention for each rule, so a user reading it knows what to change.
_REASON_WORDS = {
    "fp8": ("fp8", "Gaudi2"),
    "16-mixed": ("16-mixed", "first-generation", "bf16-mixed"),
    "graphs+compile": ("HPU graphs", "torch.compile"),
    "graphs need lazy": ("HPU graphs", "lazy mode", "PT_HPU_LAZY_MODE=0"),
    "graphs first-gen": ("HPU graphs", "first-generation", "Model-References"),
}


@pytest.mark.parametrize(
    ("name", "precision", "mode", "graphs"),
    list(itertools.product(DEVICE_NAMES, PRECISIONS, MODES, (False, True))),
)
def test_skip_rules_table(name: str, precision: str, mode: str, graphs: bool) -> None:
    reason = HPUAccelerator.skip_reason(_cell(precision, mode, graphs), name)
    rule = _expected_rule(name, precision, mode, graphs)
    if rule is None:
        assert reason is None
        return
    assert reason, f"expected the {rule!r} rule to refuse"
    for word in _REASON_WORDS[rule]:
        assert word in reason
    assert "\n" not in reason


@pytest.mark.parametrize("name", ["GAUDI2", "GAUDI2B", "GAUDI3", ""])
def test_lazy_and_fp8_allowed_beyond_first_gen(name: str) -> None:
    # The base class refuses lazy mode and fp8 everywhere; HPU is where both exist.
    assert HPUAccelerator.skip_reason(_cell("fp8", "lazy", graphs=True), name) is None


@given(st.text(max_size=20), st.sampled_from(PRECISIONS), st.sampled_from(MODES), st.booleans())
def test_skip_reason_total_on_any_name(name: str, precision: str, mode: str, graphs: bool) -> None:
    reason = HPUAccelerator.skip_reason(_cell(precision, mode, graphs), name)
    assert reason is None or (isinstance(reason, str) and reason.strip())
    if gaudi_generation(name) != 1:  # generation rules only bite on a known first-gen name
        assert reason == HPUAccelerator.skip_reason(_cell(precision, mode, graphs), "GAUDI2")


def test_every_fork_server_leaves_the_bridge_unloaded_at_import_torch() -> None:
    """C2/C3: the servers import torch and fork cells; with autoload the bridge would be inherited.
    (The launcher's use of it: tests/integration/test_hpu_fork_server.py.)"""
    assert HPUAccelerator.fork_server_env() == {"PT_HPU_AUTOLOAD": "0"}
    assert fork_server_env()["PT_HPU_AUTOLOAD"] == "0"


@pytest.mark.parametrize(("mode", "flag"), [("lazy", "1"), ("eager", "0"), ("compile", "0")])
def test_env_before_import_sets_mode(no_op_lists: pytest.MonkeyPatch, mode: str, flag: str) -> None:
    no_op_lists.delenv("HABANA_VISIBLE_MODULES", raising=False)
    # A single-device cell is rank 0 of one: its module is chosen here too (contract C4).
    assert HPUAccelerator.env_before_import(_cell(mode=mode)) == {
        "PT_HPU_LAZY_MODE": flag,
        "HLS_MODULE_ID": "0",
        "HABANA_VISIBLE_MODULES": "0",
    }


def test_env_before_import_maps_lightning_spellings(no_op_lists: pytest.MonkeyPatch, tmp_path: Path) -> None:
    no_op_lists.setenv("LOWER_LIST", str(tmp_path / "lower.txt"))
    no_op_lists.setenv("FP32_LIST", str(tmp_path / "fp32.txt"))
    no_op_lists.delenv("HABANA_VISIBLE_MODULES", raising=False)
    env = HPUAccelerator.env_before_import(_cell(mode="eager"))
    assert env == {
        "PT_HPU_LAZY_MODE": "0",
        "HLS_MODULE_ID": "0",
        "HABANA_VISIBLE_MODULES": "0",
        LOWER_LIST_ENV: str(tmp_path / "lower.txt"),
        FP32_LIST_ENV: str(tmp_path / "fp32.txt"),
    }


def test_env_before_import_bridge_spelling_wins(no_op_lists: pytest.MonkeyPatch, tmp_path: Path) -> None:
    no_op_lists.setenv("LOWER_LIST", str(tmp_path / "lightning.txt"))
    no_op_lists.setenv(LOWER_LIST_ENV, str(tmp_path / "bridge.txt"))
    env = HPUAccelerator.env_before_import(_cell())
    assert env[LOWER_LIST_ENV] == str(tmp_path / "bridge.txt")
    assert FP32_LIST_ENV not in env


def test_env_before_import_makes_paths_absolute(no_op_lists: pytest.MonkeyPatch, tmp_path: Path) -> None:
    no_op_lists.chdir(tmp_path)
    no_op_lists.setenv("FP32_LIST", "ops/fp32.txt")
    no_op_lists.setenv(LOWER_LIST_ENV, "")  # empty means unset
    env = HPUAccelerator.env_before_import(_cell())
    assert env[FP32_LIST_ENV] == os.path.join(str(tmp_path), "ops", "fp32.txt")
    assert LOWER_LIST_ENV not in env


def test_validate_op_list_env_accepts_good_and_absent(tmp_path: Path) -> None:
    good = tmp_path / "ops.txt"
    good.write_text("matmul\nsoftmax\n")
    validate_op_list_env({})
    validate_op_list_env({LOWER_LIST_ENV: str(good), "FP32_LIST": str(good), "UNRELATED": "x"})


@pytest.mark.parametrize("var", OP_LIST_VARS)
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "does not exist"),
        ("", "empty"),
        ("  \n\n", "empty"),
        (b"\xff\xfe\xfa", "unreadable"),
        ("dir", ""),
    ],
)
def test_validate_op_list_env_errors(tmp_path: Path, var: str, content: object, problem: str) -> None:
    path = tmp_path / "ops.txt"
    if content == "dir":
        path.mkdir()
        problem = "does not exist"
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    with pytest.raises(UsageError) as excinfo:
        validate_op_list_env({var: str(path)})
    message = str(excinfo.value)
    assert var in message and str(path) in message and problem in message
    assert "one op name per line" in message  # the fix
    assert "\n" not in message


def test_validate_op_list_env_refuses_both_spellings_naming_different_files(tmp_path: Path) -> None:
    good = tmp_path / "ops.txt"
    good.write_text("matmul\n")
    # Issue 14: the bridge spelling used to win silently over a different Lightning spelling beside it.
    with pytest.raises(UsageError, match="unset one of them"):
        validate_op_list_env({LOWER_LIST_ENV: str(good), "LOWER_LIST": str(tmp_path / "missing.txt")})
    validate_op_list_env({LOWER_LIST_ENV: str(good), "LOWER_LIST": str(good)})  # the same file: no conflict


@pytest.mark.parametrize("with_double", [False, True])
def test_importing_the_module_imports_neither_torch_nor_habana(with_double: bool) -> None:
    env = dict(os.environ)
    if with_double:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAKES), env.get("PYTHONPATH")]))
    code = (
        "import sys, hpubench.accelerators.hpu.accelerator as m\n"
        "from hpubench.plan.cell import Cell\n"
        "m.HPUAccelerator.skip_reason(Cell(workload='mlp', accelerator='hpu'), 'GAUDI2')\n"
        "m.HPUAccelerator.env_before_import(Cell(workload='mlp', accelerator='hpu'))\n"
        "bad = [n for n in sys.modules if n.split('.')[0] in ('torch', 'habana_frameworks')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
