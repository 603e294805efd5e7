"""The settings that stop Gaudi's bridge before any cell runs (``hpu_envcheck``): each rule's FAIL or WARN
with its fix, the OK case, and how ``hpu_doctor.findings`` gives one verdict per variable with them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hpubench.accelerators.hpu import envcheck as ec
from hpubench.accelerators.hpu.doctor import bridge_build_facts, findings
from hpubench.measure.doctor import FAIL, OK, WARN, DeviceFacts, Finding, exit_code

EIGHT = list(range(8))


def by_check(found: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in found:
        out.setdefault(f.check, []).append(f)
    return out


# ---- versions ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2.5.1a0+git354fc07", (2, 5, "git354fc07")),
        ("2.5", (2, 5, None)),
        ("2.5\n", (2, 5, None)),
        ("2.13.0+cpu", (2, 13, "cpu")),
        ("2.6.0.dev20241001+Git_AB-c", (2, 6, "git.ab.c")),
        ("2", (2, 0, None)),
        ("1!2.5.1", (2, 5, None)),
    ],
)
def test_versions_read_as_the_bridge_reads_them(text: str, want: tuple[int, int, str | None]) -> None:
    assert ec.parse_version(text) == want


@pytest.mark.parametrize("text", ["", "abc", "2.5+", "2.5+git!x"])
def test_a_non_version_is_none(text: str) -> None:
    assert ec.parse_version(text) is None


def test_versions_agree_with_packaging_where_it_is_installed() -> None:
    version = pytest.importorskip("packaging.version")
    for text in ("2.5.1a0+git354fc07", "2.5", "2.13.0+cpu", "2.6.0.dev20241001+Git_AB-c", "2"):
        v = version.Version(text)
        assert ec.parse_version(text) == (v.major, v.minor, v.local)


def test_lazy_is_anything_but_exactly_zero() -> None:
    assert ec.lazy_requested(None) and ec.lazy_requested("1") and ec.lazy_requested("2")
    assert ec.lazy_requested(" 0") and not ec.lazy_requested("0")


# ---- 1. the torch pin -------------------------------------------------------------------------------------
def test_torch_pin_mismatch_fails_with_the_bridges_assertion_and_the_fix() -> None:
    f = ec.torch_pin_finding("2.5", "2.6.0+cpu")
    assert f is not None and f.level == FAIL and f.check == "torch pin"
    assert "built for torch 2.5 but torch 2.6.0+cpu is installed" in f.detail
    assert "Compile-time major/minor PyTorch version 2.5 differs from run-time 2.6.0+cpu." in f.detail
    assert "install the torch this Intel Gaudi software release ships (torch 2.5" in f.fix
    assert "built for torch 2.6" in f.fix


@pytest.mark.parametrize(("required", "torch"), [("2.5", "2.5.1a0+git354fc07"), ("2.5\n", "2.5.0+cpu")])
def test_torch_pin_match_is_ok(required: str, torch: str) -> None:
    f = ec.torch_pin_finding(required, torch)
    assert f is not None and f.level == OK and "built for torch 2.5" in f.detail


def test_an_unreadable_or_broken_pin_fails_and_an_unknown_one_says_nothing() -> None:
    unread = ec.torch_pin_finding(None, "2.5.1", "/x/required_version.txt does not exist")
    assert unread is not None and unread.level == FAIL and "does not exist" in unread.detail
    assert "reinstall the Intel Gaudi software" in unread.fix
    broken = ec.torch_pin_finding("two.five", "2.5.1")
    assert broken is not None and broken.level == FAIL and "InvalidVersion" in broken.detail
    assert ec.torch_pin_finding(None, "2.5.1") is None


# ---- 2. lazy mode on stock torch --------------------------------------------------------------------------
@pytest.mark.parametrize("lazy", [None, "1", "2", "true"])
def test_lazy_mode_on_stock_torch_fails_with_both_fixes(lazy: str | None) -> None:
    f = ec.torch_build_finding("2.5.1+cpu", None, lazy)
    assert f is not None and f.level == FAIL and f.check == "torch build"
    assert "Stock PyTorch version 2.5.1+cpu is not supported in Lazy mode." in f.detail
    assert ("unset (lazy, the default)" in f.detail) == (lazy is None)
    assert "export PT_HPU_LAZY_MODE=0" in f.fix and "Habana's build" in f.fix


def test_eager_on_stock_torch_warns_that_lazy_cells_cannot_run() -> None:
    f = ec.torch_build_finding("2.5.1+cpu", None, "0")
    assert f is not None and f.level == WARN and "lazy cells fail" in f.detail
    assert "to run lazy cells: install the torch the Intel Gaudi software release ships" in f.fix


def test_torch_without_a_local_label_fails_the_bridge_in_either_mode() -> None:
    for lazy in (None, "0"):
        f = ec.torch_build_finding("2.5.1", None, lazy)
        assert f is not None and f.level == FAIL and "AttributeError" in f.detail
        assert "install the torch the Intel Gaudi software release ships" in f.fix


@pytest.mark.parametrize(
    ("torch", "is_fork", "lazy"),
    [("2.5.1a0+git354fc07", None, None), ("2.5.1a0+git354fc07", None, "0"), ("2.13.0+cpu", True, "1")],
)
def test_habanas_torch_build_is_ok(torch: str, is_fork: bool | None, lazy: str | None) -> None:
    f = ec.torch_build_finding(torch, is_fork, lazy)
    assert f is not None and f.level == OK and "Habana's build" in f.detail


def test_a_told_build_wins_over_the_label() -> None:
    """The double says which build its torch stands for; its label (``+git``) is then not read."""
    f = ec.torch_build_finding("2.5.1a0+git354fc07", False, None)
    assert f is not None and f.level == FAIL


# ---- 3. a non-integer PT_HPU_LAZY_MODE --------------------------------------------------------------------
@pytest.mark.parametrize("raw", ["true", "", "lazy", "1.0"])
def test_a_non_integer_lazy_mode_fails_any_bridge_import(raw: str) -> None:
    f = ec.lazy_value_finding(raw)
    assert f is not None and f.level == FAIL and f.check == "lazy mode"
    assert "not an integer" in f.detail and "ValueError" in f.detail
    assert "PT_HPU_LAZY_MODE=1" in f.fix and "PT_HPU_LAZY_MODE=0" in f.fix


@pytest.mark.parametrize("raw", [None, "0", "1", "2", " 1"])
def test_an_integer_or_unset_lazy_mode_is_not_this_rules_business(raw: str | None) -> None:
    assert ec.lazy_value_finding(raw) is None


# ---- 4. HLS_MODULE_ID and HABANA_VISIBLE_MODULES ----------------------------------------------------------
def test_a_module_id_outside_the_visible_modules_fails_and_warns() -> None:
    found = by_check(ec.module_env_findings({"HLS_MODULE_ID": "3", "HABANA_VISIBLE_MODULES": "4,5"}))
    assert [f.level for f in found["HLS_MODULE_ID"]] == [FAIL, WARN]
    fail = found["HLS_MODULE_ID"][0]
    assert "HLS_MODULE_ID=3 is not among HABANA_VISIBLE_MODULES=4,5" in fail.detail
    assert "Device acquire failed." in fail.detail and "current_module_id=3" in fail.detail
    assert "unset HLS_MODULE_ID" in fail.fix and "one of 4,5" in fail.fix
    assert "HABANA_VISIBLE_MODULES" not in found


@pytest.mark.parametrize(
    "env", [{"HLS_MODULE_ID": "4"}, {"HLS_MODULE_ID": "5", "HABANA_VISIBLE_MODULES": "4,5"}]
)
def test_any_module_id_in_the_environment_warns(env: dict[str, str]) -> None:
    (f,) = ec.module_env_findings(env)
    assert f.level == WARN and f.check == "HLS_MODULE_ID" and "every process that inherits it" in f.detail
    assert "unset HLS_MODULE_ID" in f.fix


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("", "set but empty"),
        ("4,x", "not an integer"),
        ("4,,5", "not an integer"),
        (
            "0,1,2,3,4,5,6,7,8",
            'lists 9 modules: the bridge asserts "HABANA_VISIBLE_MODULES does not have valid',
        ),
    ],
)
def test_visible_modules_the_bridge_cannot_read_fail(raw: str, says: str) -> None:
    (f,) = ec.module_env_findings({"HABANA_VISIBLE_MODULES": raw})
    assert f.level == FAIL and f.check == "HABANA_VISIBLE_MODULES" and says in f.detail
    assert "unset HABANA_VISIBLE_MODULES" in f.fix and "up to 8 module ids" in f.fix


@pytest.mark.parametrize(
    "env", [{}, {"HABANA_VISIBLE_MODULES": "0,1,2,3,4,5,6,7"}, {"HABANA_VISIBLE_MODULES": " 4, 5"}]
)
def test_readable_visible_modules_and_no_module_id_are_quiet(env: dict[str, str]) -> None:
    assert ec.module_env_findings(env) == []
    assert ec.lazy_value_finding(env.get("PT_HPU_LAZY_MODE")) is None


# ---- one verdict per variable in hpu_doctor's findings ---------------------------------------------------
def gaudi(environ: dict[str, str], build: dict[str, object] | None, present: bool = True) -> DeviceFacts:
    extra: dict[str, object] = {"environ": environ, "module_ids": EIGHT, "bridge_build": build}
    if not present:
        return DeviceFacts("hpu", False, absent_reason="AssertionError: ...", extra=extra)
    extra["lazy_in_force"] = environ.get("PT_HPU_LAZY_MODE") != "0"
    return DeviceFacts("hpu", True, count=8, names=("GAUDI2",) * 8, extra=extra)


FORK = {"torch": "2.5.1a0+git354fc07", "required": "2.5", "error": None, "fork": None}


def test_doctor_findings_carry_the_build_checks_and_one_verdict_per_variable() -> None:
    healthy = by_check(findings(gaudi({}, FORK)))
    assert healthy["torch pin"][0].level == OK and healthy["torch build"][0].level == OK
    env = {"HLS_MODULE_ID": "3", "HABANA_VISIBLE_MODULES": "4,5"}
    broken = by_check(findings(gaudi(env, {**FORK, "required": "2.4"})))
    assert broken["torch pin"][0].level == FAIL
    assert [f.level for f in broken["HLS_MODULE_ID"]] == [FAIL]  # not also OK (module 3 exists) or WARN
    assert [f.level for f in broken["HABANA_VISIBLE_MODULES"]] == [OK]
    lazy = by_check(findings(gaudi({"PT_HPU_LAZY_MODE": "true"}, FORK)))["lazy mode"]
    assert len(lazy) == 1 and "ValueError" in lazy[0].detail


def test_every_environment_rule_reaches_the_doctor_once_per_variable() -> None:
    env = {"PT_HPU_LAZY_MODE": "yes", "HLS_MODULE_ID": "1", "HABANA_VISIBLE_MODULES": ""}
    found = findings(gaudi(env, FORK))
    settings = {"lazy mode", "HABANA_VISIBLE_MODULES", "HLS_MODULE_ID"}
    assert sorted((f.check, f.level) for f in found if f.check in settings) == [
        ("HABANA_VISIBLE_MODULES", FAIL),
        ("HLS_MODULE_ID", WARN),  # module 1 exists (OK), but a set HLS_MODULE_ID pins every process
        ("lazy mode", FAIL),
    ]


@pytest.mark.parametrize(
    ("env", "check", "level", "says"),
    [
        ({"HABANA_VISIBLE_MODULES": "4,x"}, "HABANA_VISIBLE_MODULES", FAIL, "the bridge raises ValueError"),
        ({"HLS_MODULE_ID": "9"}, "HLS_MODULE_ID", FAIL, "which does not exist"),  # not only the WARN
        ({"HLS_MODULE_ID": "2"}, "HLS_MODULE_ID", WARN, "is set in this environment"),  # not the OK
    ],
)
def test_the_worse_verdict_wins_and_at_the_same_level_the_bridges_words(env, check, level, says) -> None:
    (f,) = by_check(findings(gaudi(env, FORK)))[check]
    assert f.level == level and says in f.detail, f


def test_a_bridge_that_failed_its_import_still_gets_the_reason_and_its_fix() -> None:
    """Detection imports the bridge: a pin mismatch or a bad PT_HPU_LAZY_MODE makes it absent."""
    pin = findings(gaudi({}, {**FORK, "required": "2.4"}, present=False))
    assert exit_code(pin) == 1 and [f.check for f in pin if f.level == FAIL] == ["torch pin"]
    assert not any(f.level == OK and f.check.startswith("torch ") for f in pin)
    lazy = findings(gaudi({"PT_HPU_LAZY_MODE": "true", "HLS_MODULE_ID": "2"}, None, present=False))
    assert [(f.check, f.level) for f in lazy if f.level != OK] == [("lazy mode", FAIL)]


# ---- reading the pin without importing the bridge ---------------------------------------------------------
@pytest.fixture
def bridge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An installed bridge's layout on ``sys.path``, with any habana_frameworks already imported set aside."""

    def ours() -> list[str]:
        return [k for k in sys.modules if k == "habana_frameworks" or k.startswith("habana_frameworks.")]

    saved = {k: sys.modules.pop(k) for k in ours()}
    pkg = tmp_path / "habana_frameworks"
    (pkg / "torch").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield pkg
    finally:
        for k in ours():
            del sys.modules[k]
        sys.modules.update(saved)


def test_the_pin_is_read_from_required_version_txt_without_importing_the_bridge(bridge: Path) -> None:
    (bridge / "torch" / "required_version.txt").write_text("2.5")
    (bridge / "torch" / "__init__.py").write_text("raise AssertionError('imported')")
    facts = bridge_build_facts()
    assert facts is not None and facts["required"] == "2.5" and facts["error"] is None
    assert facts["fork"] is None and facts["torch"]
    assert "habana_frameworks.torch" not in sys.modules


def test_a_bridge_without_required_version_txt_is_an_error(bridge: Path) -> None:
    facts = bridge_build_facts()
    assert facts is not None and facts["required"] is None
    assert str(facts["error"]).endswith("required_version.txt does not exist")
