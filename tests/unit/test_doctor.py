"""``hpubench doctor``'s findings are pure: facts in, OK / WARN / FAIL with a one-line fix out."""

from __future__ import annotations

import json

import pytest

from hpubench.accelerators import get
from hpubench.accelerators.hpu.doctor import (
    HLML_LIB,
    autoload_finding,
    lazy_mode_finding,
    parse_modules,
    visible_modules_findings,
)
from hpubench.measure.doctor import (
    FAIL,
    OK,
    WARN,
    DeviceFacts,
    Finding,
    device_findings,
    exit_code,
    governor_finding,
    heap_finding,
    memory_finding,
    plan_findings,
    sections,
    telemetry_finding,
    thread_findings,
    to_json,
)
from hpubench.run.doctorfacts import governors, host_facts

GIB = 1024**3
EIGHT = list(range(8))


def levels(findings: list[Finding]) -> dict[str, str]:
    return {f.check: f.level for f in findings}


def gaudi(**kw: object) -> DeviceFacts:
    base: dict[str, object] = {
        "accelerator": "hpu",
        "present": True,
        "count": 8,
        "names": ("GAUDI2",) * 8,
        "libraries": {HLML_LIB: None, "hccl": None},
        "extra": {"environ": {}, "module_ids": EIGHT, "lazy_in_force": True},
    }
    base.update(kw)
    return DeviceFacts(**base)  # type: ignore[arg-type]


def test_a_problem_without_its_fix_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a fix"):
        Finding("host", "x", FAIL, "broken")
    with pytest.raises(ValueError, match="level"):
        Finding("host", "x", "MAYBE", "?")


def test_exit_code_is_1_on_any_fail_and_warnings_do_not_fail() -> None:
    ok = Finding("host", "a", OK, "fine")
    warn = Finding("host", "b", WARN, "meh", "do x")
    fail = Finding("hpu", "c", FAIL, "bad", "do y")
    assert exit_code([ok, warn]) == 0
    assert exit_code([ok, warn, fail]) == 1
    assert sections([ok, fail, warn]) == ["host", "hpu"]


@pytest.mark.parametrize(
    ("found", "level"),
    [({}, OK), ({"performance": 4}, OK), ({"schedutil": 2}, OK), ({"powersave": 1, "performance": 3}, WARN)],
)
def test_governor(found: dict[str, int], level: str) -> None:
    f = governor_finding(found)
    assert f.level == level
    if not found:
        assert "unknown" in f.detail
    if level == WARN:
        assert "performance" in f.fix


def test_governors_are_read_per_cpu(tmp_path) -> None:
    for cpu, gov in enumerate(("powersave", "powersave", "performance")):
        d = tmp_path / f"cpu{cpu}" / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")
    assert governors(str(tmp_path / "cpu*" / "cpufreq" / "scaling_governor")) == {
        "powersave": 2,
        "performance": 1,
    }
    assert governors(str(tmp_path / "nothing*")) == {}


def test_thread_policy_and_openmp_settings() -> None:
    cpus = list(range(8))
    assert levels(thread_findings(cpus, {})) == {"threads": OK}
    assert "7 intra-op threads" in thread_findings(cpus, {})[0].detail  # cores-1 by default
    bad = thread_findings(cpus, {"HPUBENCH_CPU_THREADS": "lots"})
    assert [f.level for f in bad] == [FAIL] and "cores-1" in bad[0].fix
    user = thread_findings(cpus, {"OMP_NUM_THREADS": "4"})
    assert user[0].level == OK and "OMP_NUM_THREADS=4" in user[0].detail
    assert levels(thread_findings(cpus, {"OMP_NUM_THREADS": "four"}))["OMP_NUM_THREADS"] == FAIL


def test_heap_policy() -> None:
    glibc = "glibc 2.36"
    steady = heap_finding(glibc, {})
    assert steady.level == OK and "steady (default)" in steady.detail and glibc in steady.detail
    assert "mmap 32 MiB, trim 1 GiB" in steady.detail
    system = heap_finding(glibc, {"HPUBENCH_MALLOC": "system"})
    assert system.level == WARN and "HPUBENCH_MALLOC" in system.fix
    assert heap_finding(None, {}).level == WARN  # not glibc: mallopt cannot hold the thresholds
    user = heap_finding(None, {"LD_PRELOAD": "libjemalloc.so.2"})
    assert user.level == OK and "LD_PRELOAD=libjemalloc.so.2" in user.detail
    bad = heap_finding(glibc, {"HPUBENCH_MALLOC": "big"})
    assert bad.level == FAIL and "'big'" in bad.detail


def test_the_heap_finding_reads_the_variables_the_launcher_collects() -> None:
    """doctor's launcher passes only ``host_facts``' environment to the rule: a user's own glibc setting
    must survive that, or the finding would warn about a heap the user already holds."""
    environ = {"HPUBENCH_MALLOC": "system", "MALLOC_TRIM_THRESHOLD_": "131072", "UNRELATED": "1"}
    user = heap_finding("glibc 2.36", host_facts(environ).environ)
    assert user.level == OK and "MALLOC_TRIM_THRESHOLD_=131072" in user.detail
    system = heap_finding("glibc 2.36", host_facts({"HPUBENCH_MALLOC": "system"}).environ)
    assert system.level == WARN and "unset HPUBENCH_MALLOC" in system.fix


def test_host_memory() -> None:
    assert memory_finding(20 * GIB, 64 * GIB).level == OK
    assert memory_finding(2 * GIB, 64 * GIB).level == WARN
    assert memory_finding(None, None).detail == "unknown"


def test_device_libraries_cards_and_absence() -> None:
    assert [f.level for f in device_findings(DeviceFacts("cuda", False, absent_reason="no GPU"))] == [OK]
    broken = gaudi(libraries={HLML_LIB: "HLMLError: 1", "hccl": None})
    assert levels(device_findings(broken, {HLML_LIB: "install it"}))[HLML_LIB] == FAIL
    missing = gaudi(libraries={HLML_LIB: "ModuleNotFoundError: pyhlml"}, optional_missing=(HLML_LIB,))
    assert levels(device_findings(missing))[HLML_LIB] == WARN
    held = gaudi(unavailable=(("module 3", "RuntimeError: device busy"),))
    acquire = [f for f in device_findings(held) if f.check == "device acquire"]
    assert [f.level for f in acquire] == [FAIL] and "module 3" in acquire[0].detail
    assert "another process" in acquire[0].fix
    crashed = device_findings(DeviceFacts("hpu", False, error="RuntimeError: boom"))
    assert [f.level for f in crashed] == [FAIL]


def test_device_facts_survive_json() -> None:
    facts = gaudi(memory=(("module 0", 90 * GIB, 96 * GIB),), unavailable=(("module 1", "busy"),))
    assert DeviceFacts.from_dict(json.loads(json.dumps(facts.to_dict()))) == facts


def test_plan_with_nothing_to_run_fails() -> None:
    assert [f.level for f in plan_findings("full", 10, 4, [("lazy mode exists only on HPU", 6)])] == [OK, OK]
    assert plan_findings("full", 10, 0, [("no cpu device", 10)])[0].level == FAIL


def test_memory_fit_skips_are_named_per_cell_and_an_unchecked_fit_warns() -> None:
    reason = "needs ~40.0 GiB per device, 32.0 GiB available (memory estimate; see hpubench list cells)"
    found = plan_findings("full", 3, 1, [("lazy mode exists only on HPU", 1)], [("mlp/tiny/hpu/bs9", reason)])
    assert found[0].detail == "--matrix full: 3 cells, 1 would run, 2 skipped"
    fits = [f for f in found if f.check == "memory fit"]
    assert [(f.level, f.detail) for f in fits] == [(OK, f"mlp/tiny/hpu/bs9: {reason}")]
    warned = plan_findings("full", 1, 1, [], memory_problem="the estimate probe failed: boom")
    assert [(f.check, f.level) for f in warned] == [("cells", OK), ("memory fit", WARN)]
    assert "boom" in warned[1].detail and warned[1].fix
    # every cell skipped for memory leaves nothing to run: that fails like any empty plan
    assert plan_findings("full", 1, 0, [], [("mlp/tiny/hpu/bs9", reason)])[0].level == FAIL


# ---- Gaudi rules ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "in_force", "level"),
    [
        (None, True, OK),
        ("1", True, OK),
        ("0", False, OK),
        ("2", True, FAIL),
        ("true", True, FAIL),
        ("1", False, WARN),
    ],
)
def test_lazy_mode(raw: str | None, in_force: bool, level: str) -> None:
    f = lazy_mode_finding(raw, in_force)
    assert f.level == level
    if level == FAIL:
        assert "PT_HPU_LAZY_MODE=1" in f.fix and "PT_HPU_LAZY_MODE=0" in f.fix


def test_autoload() -> None:
    assert autoload_finding(None, True).level == OK
    assert "loaded the bridge" in autoload_finding("1", True).detail
    assert autoload_finding("yes", False).level == WARN


def test_visible_modules() -> None:
    assert parse_modules("4, 5,6") == [4, 5, 6]
    assert parse_modules("a,b") is None and parse_modules("") is None
    assert levels(visible_modules_findings({}, EIGHT)) == {"visible modules": OK}
    assert [f.level for f in visible_modules_findings({"HABANA_VISIBLE_MODULES": "4,5,6,7"}, EIGHT)] == [OK]
    nine = visible_modules_findings({"HABANA_VISIBLE_MODULES": "9"}, EIGHT)
    assert [f.level for f in nine] == [FAIL]
    assert "module 9" in nine[0].detail and "0,1,2,3,4,5,6,7" in nine[0].fix
    assert visible_modules_findings({"HABANA_VISIBLE_MODULES": "x"}, EIGHT)[0].level == FAIL
    assert visible_modules_findings({"HABANA_VISIBLE_MODULES": "1,1"}, EIGHT)[0].level == WARN
    assert visible_modules_findings({"HABANA_VISIBLE_MODULES": "1"}, None)[0].level == WARN
    hls = visible_modules_findings({"HLS_MODULE_ID": "8"}, EIGHT)
    assert levels(hls)["HLS_MODULE_ID"] == FAIL


def test_hpu_findings_through_the_accelerator_hook() -> None:
    hpu = get("hpu")
    healthy = hpu.doctor_findings(gaudi())
    assert exit_code(healthy) == 0
    assert {"devices", "lazy mode", "autoload", "visible modules", "hccl", HLML_LIB} <= set(levels(healthy))
    broken = gaudi(extra={"environ": {"PT_HPU_LAZY_MODE": "2"}, "module_ids": EIGHT, "lazy_in_force": True})
    assert levels(hpu.doctor_findings(broken))["lazy mode"] == FAIL
    # Not on this machine: the bridge's settings are not judged, except a visibly malformed one.
    absent = DeviceFacts("hpu", False, absent_reason="habana_frameworks is not installed")
    assert exit_code(hpu.doctor_findings(absent)) == 0


def test_json_carries_sections_findings_and_exit_code() -> None:
    findings = [Finding("host", "a", OK, "fine"), Finding("hpu", "lazy mode", FAIL, "bad", "export it")]
    doc = json.loads(to_json(findings, {"torch": "2.13"}))
    assert doc["exit_code"] == 1 and doc["sections"] == ["host", "hpu"]
    assert doc["counts"] == {OK: 1, WARN: 0, FAIL: 1}
    assert doc["findings"][1] == {
        "section": "hpu",
        "check": "lazy mode",
        "level": FAIL,
        "detail": "bad",
        "fix": "export it",
    }


# ---- telemetry cost ----------------------------------------------------------------------------------


def test_telemetry_that_was_not_probed_adds_no_finding() -> None:
    assert telemetry_finding("cuda", {}) is None


def test_a_cheap_reading_is_ok_and_says_its_share_of_a_core() -> None:
    f = telemetry_finding("cuda", {"source": "nvml", "full_cpu_s": 0.00005})
    assert f is not None and f.level == OK
    assert f.detail == (
        "nvml: a reading takes 0.05 ms of CPU, 0.05% of a core at the default --telemetry-interval 0.1"
    )


def test_a_dear_reading_warns_with_an_interval_that_fits_a_fifth_of_a_percent() -> None:
    # The H100 host measured: 2.4 ms of CPU a reading, 2.4% of a core every 0.1 s.
    f = telemetry_finding("cuda", {"source": "nvml", "full_cpu_s": 0.0024})
    assert f is not None and f.level == WARN
    assert "2.4 ms of CPU, 2.4% of a core" in f.detail and "can lose about that much" in f.detail
    assert "--telemetry-interval 1.2 (0.2% of a core)" in f.fix
    slow = telemetry_finding("hpu", {"source": "hlml", "full_cpu_s": 0.12})  # no exponents in the text
    assert "120 ms of CPU, 120% of a core" in slow.detail and "--telemetry-interval 60 (" in slow.fix
    # The bound is the share at the interval asked about, not the reading alone.
    assert telemetry_finding("cuda", {"source": "nvml", "full_cpu_s": 0.0024}, interval_s=1.0).level == OK


def test_absent_or_failing_telemetry_says_why() -> None:
    absent = telemetry_finding("cpu", {"absent": "no RAPL powercap interface"})
    assert absent is not None and absent.level == OK and absent.detail == "none: no RAPL powercap interface"
    broken = telemetry_finding("hpu", {"error": "reading hlml failed: HLMLError: code 15"})
    assert broken is not None and broken.level == WARN and "HLMLError" in broken.detail and broken.fix


def test_device_findings_carry_the_telemetry_finding_and_facts_round_trip() -> None:
    facts = DeviceFacts("cuda", True, 1, ("H100",), telemetry={"source": "nvml", "full_cpu_s": 0.0024})
    back = DeviceFacts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert back == facts
    found = {f.check: f for f in device_findings(back)}
    assert found["telemetry"].level == WARN
    assert "telemetry" not in {f.check for f in device_findings(DeviceFacts("cuda", True, 1, ("H100",)))}
