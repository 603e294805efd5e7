"""C12: the bridge asserts at import that torch's major.minor is the one it was built for
(``required_version.txt``), and refuses lazy mode on a stock torch (one whose local version label does not
start with "git"): ``habana_frameworks/torch/__init__.py`` lines 34-48 (1.19). hpubench turns either into
a reason (a skipped cell naming the bridge's words), never a crash or a silent "no device"."""

from __future__ import annotations

import importlib

import pytest
from contract_doubles import double_env, run_worker

CELL = {"workload": "mlp", "accelerator": "hpu", "warmup_steps": 1, "steps": 2}


def test_a_torch_of_another_major_minor_is_refused_at_import(bridge, monkeypatch) -> None:
    monkeypatch.setenv("HPUBENCH_FAKE_HPU_REQUIRED_TORCH", "2.5")
    with pytest.raises(AssertionError, match=r"Compile-time major/minor PyTorch version 2\.5 differs from"):
        bridge()


@pytest.mark.parametrize(("lazy", "refused"), [(None, True), ("1", True), ("2", True), ("0", False)])
def test_lazy_mode_on_a_stock_torch_is_refused_at_import(bridge, monkeypatch, lazy, refused) -> None:
    monkeypatch.setenv("HPUBENCH_FAKE_HPU_TORCH_BUILD", "stock")
    env = {} if lazy is None else {"PT_HPU_LAZY_MODE": lazy}
    if refused:
        with pytest.raises(
            AssertionError, match=r"^Stock PyTorch version .* is not supported in Lazy mode\.$"
        ):
            bridge(**env)
    else:
        assert not bridge(**env).is_lazy()
        assert importlib.import_module("habana_frameworks.torch").__version__


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"HPUBENCH_FAKE_HPU_REQUIRED_TORCH": "2.5"}, "Compile-time major/minor PyTorch version 2.5"),
        ({"HPUBENCH_FAKE_HPU_TORCH_BUILD": "stock"}, "is not supported in Lazy mode"),
    ],
)
def test_hpubench_skips_the_cell_with_the_bridges_words(extra: dict[str, str], words: str) -> None:
    rec = run_worker({**CELL, "mode": "lazy"}, double_env(PT_HPU_LAZY_MODE="1", **extra))
    assert rec["status"] == "skipped", rec["reason"]
    assert "no hpu device is available" in rec["reason"] and words in rec["reason"], rec["reason"]


def test_eager_cells_still_run_on_a_stock_torch() -> None:
    env = double_env(PT_HPU_LAZY_MODE="0", HPUBENCH_FAKE_HPU_TORCH_BUILD="stock")
    rec = run_worker({**CELL, "mode": "eager"}, env)
    assert rec["status"] == "ok", rec["reason"]
