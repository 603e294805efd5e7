"""C20 (issue 31, fact 13): pyhlml before ``hlmlInit``, as habana-pyhlml 1.24.2.481's ``pyhlml/main.py``.

The package keeps ``_hlmlOBJ = None`` until ``hlmlInit`` loads libhlml.so and every call begins with
``_hlmlOBJ.get_func_ptr(...)``: a call before ``hlmlInit`` raises ``AttributeError``, not ``HLMLError``.
``hlmlInit`` without the library raises ``HLMLError_Uninitialized`` (a subclass of ``HLMLError`` that
``hlmlInit`` itself creates, one per code) and leaves ``_hlmlOBJ`` None, so nothing works after it either.
hpubench's two HLML users (telemetry's ``HLMLSource``, doctor's ``_hlml_facts``) must open with
``hlmlInit``, never shut down a library that did not load, and turn any failure into their usual reason.
What libhlml answers after ``hlmlShutdown`` is not known from the wrapper (it keeps ``_hlmlOBJ``); the
double raises ``HLMLError`` there, an unverified choice.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from hpubench.accelerators.hpu import doctor as hpu_doctor
from hpubench.measure.doctor import FAIL, DeviceFacts, device_findings
from hpubench.measure.telemetry.base import TelemetryUnavailable
from hpubench.measure.telemetry.hlml import HLMLSource

BEFORE_INIT = "'NoneType' object has no attribute 'get_func_ptr'"  # pyhlml/main.py on _hlmlOBJ = None
NO_LIBRARY = "HLMLError_Uninitialized: HLML Error with code 1"  # hlml_lib.py: CDLL failed
NOT_SUPPORTED = "HLMLError_NotSupported: HLML Error with code 3"

CALLS_BEFORE_INIT = [
    ("hlmlDeviceGetCount", ()),
    ("hlmlDeviceGetHandleByIndex", (0,)),
    ("hlmlDeviceGetPowerUsage", (None,)),
    ("hlmlShutdown", ()),
]


def _calls(log: Path) -> list[str]:
    """The HLML calls the double logged, in order (names only)."""
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8").splitlines()
    return [line.split("\t")[0] for line in lines if line.startswith("hlml.")]


@pytest.fixture
def call_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pyhlml: ModuleType) -> Path:
    """The double's call log for this test (set after the ``pyhlml`` fixture cleared the knobs)."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("HPUBENCH_FAKE_HPU_CALL_LOG", str(log))
    return log


# ---- the double, as the package --------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "args"), CALLS_BEFORE_INIT, ids=[c for c, _ in CALLS_BEFORE_INIT])
def test_a_call_before_hlmlInit_raises_attribute_error_not_hlml_error(
    pyhlml: ModuleType, name: str, args: tuple[object, ...]
) -> None:
    with pytest.raises(AttributeError) as info:
        getattr(pyhlml, name)(*args)
    assert str(info.value) == BEFORE_INIT
    assert not isinstance(info.value, pyhlml.hlml_error.HLMLError)


def test_hlmlInit_without_libhlml_raises_the_uninitialized_subclass_and_loads_nothing(
    pyhlml: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    errors = pyhlml.hlml_error
    assert not hasattr(errors, "HLMLError_Uninitialized")  # hlmlInit makes the subclasses
    assert type(errors.HLMLError(1)) is errors.HLMLError
    monkeypatch.setenv("HPUBENCH_FAKE_HLML_FAIL", "init")
    with pytest.raises(errors.HLMLError) as info:
        pyhlml.hlmlInit()
    assert type(info.value) is errors.HLMLError_Uninitialized
    assert f"{type(info.value).__name__}: {info.value}" == NO_LIBRARY and info.value.value == 1
    assert capsys.readouterr().out == "Failed to load libhlml\n"  # hlml_lib.py prints it to stdout
    for name, args in CALLS_BEFORE_INIT:  # the library never loaded: still the AttributeError
        with pytest.raises(AttributeError, match="get_func_ptr"):
            getattr(pyhlml, name)(*args)


def test_after_hlmlInit_each_code_raises_its_own_subclass(
    pyhlml: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    errors = pyhlml.hlml_error
    pyhlml.hlmlInit()
    assert type(errors.HLMLError(2)) is errors.HLMLError_InvalidArgument
    assert errors.HLMLError_AipIsLost().value == 15 and errors.HLMLError(15) == errors.HLMLError_AipIsLost()
    with pytest.raises(errors.HLMLError_InvalidArgument):
        pyhlml.hlmlDeviceGetHandleByIndex(99)
    monkeypatch.setenv("HPUBENCH_FAKE_HLML_FAIL", "power")
    with pytest.raises(errors.HLMLError_NotSupported):
        pyhlml.hlmlDeviceGetPowerUsage(pyhlml.hlmlDeviceGetHandleByIndex(0))
    pyhlml.hlmlShutdown()


def test_after_hlmlShutdown_calls_raise_hlml_error_not_attribute_error(pyhlml: ModuleType) -> None:
    """The wrapper keeps ``_hlmlOBJ`` after shutdown; libhlml's own answer is unverified (see docstring)."""
    pyhlml.hlmlInit()
    pyhlml.hlmlShutdown()
    with pytest.raises(pyhlml.hlml_error.HLMLError_Uninitialized):
        pyhlml.hlmlDeviceGetCount()


# ---- hpubench's telemetry ----------------------------------------------------------------------------------
def test_telemetry_without_libhlml_is_unavailable_with_the_reason(
    pyhlml: ModuleType, call_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPUBENCH_FAKE_HLML_FAIL", "init")
    with pytest.raises(TelemetryUnavailable) as info:
        HLMLSource(0)
    assert str(info.value) == f"hlmlInit failed: {NO_LIBRARY}"
    assert _calls(call_log) == ["hlml.hlmlInit"]  # no shutdown of a library that never loaded


def test_telemetry_opens_with_hlmlInit_and_closes_with_hlmlShutdown(
    pyhlml: ModuleType, call_log: Path
) -> None:
    source = HLMLSource(0)
    try:
        assert source.read().power_w is not None
    finally:
        source.close()
    calls = _calls(call_log)
    assert calls[0] == "hlml.hlmlInit" and calls[-1] == "hlml.hlmlShutdown"
    assert calls.count("hlml.hlmlInit") == 1 and calls.count("hlml.hlmlShutdown") == 1
    assert source.errors == {}


def test_telemetry_failing_after_hlmlInit_is_unavailable_and_shuts_down(
    pyhlml: ModuleType, call_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPUBENCH_FAKE_HLML_FAIL", "name")
    with pytest.raises(TelemetryUnavailable) as info:
        HLMLSource(0)
    assert str(info.value) == f"HLML module 0: {NOT_SUPPORTED}"
    calls = _calls(call_log)
    assert calls[0] == "hlml.hlmlInit" and calls[-1] == "hlml.hlmlShutdown"


# ---- hpubench doctor ---------------------------------------------------------------------------------------
def test_doctor_without_libhlml_reports_the_library_as_not_loading(
    pyhlml: ModuleType, call_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPUBENCH_FAKE_HLML_FAIL", "init")
    with pytest.raises(pyhlml.hlml_error.HLMLError) as info:
        hpu_doctor._hlml_facts()
    assert _calls(call_log) == ["hlml.hlmlInit"]  # no hlmlShutdown: on pyhlml an AttributeError
    # collect_facts records any exception of _hlml_facts as the library's error, in _one_line's words
    reason = hpu_doctor._one_line(info.value)
    assert reason == NO_LIBRARY
    facts = DeviceFacts(hpu_doctor.SECTION, True, count=1, libraries={hpu_doctor.HLML_LIB: reason})
    found = [f for f in device_findings(facts, hpu_doctor.LIBRARY_FIXES) if f.check == hpu_doctor.HLML_LIB]
    assert [(f.level, f.detail) for f in found] == [(FAIL, f"does not load: {NO_LIBRARY}")]
    assert "libhlml.so" in (found[0].fix or "")


def test_doctor_reads_hlml_between_hlmlInit_and_hlmlShutdown(pyhlml: ModuleType, call_log: Path) -> None:
    facts = hpu_doctor._hlml_facts()
    assert facts["count"] == 8 and sorted(facts["module_ids"]) == list(range(8))
    calls = _calls(call_log)
    assert calls[0] == "hlml.hlmlInit" and calls[-1] == "hlml.hlmlShutdown"


def test_doctor_failing_after_hlmlInit_raises_hlml_error_and_still_shuts_down(
    pyhlml: ModuleType, call_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPUBENCH_FAKE_HLML_FAIL", "name")
    with pytest.raises(pyhlml.hlml_error.HLMLError) as info:
        hpu_doctor._hlml_facts()
    assert hpu_doctor._one_line(info.value) == NOT_SUPPORTED
    assert _calls(call_log)[-1] == "hlml.hlmlShutdown"
