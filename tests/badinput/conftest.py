"""The bad-input suite prints how many table cases it holds (issue 14: the suite prints its case count)."""

from __future__ import annotations

from tests.badinput.cases import CASES


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    ran = [
        r
        for r in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", [])
        if "test_bad_input_table" in r.nodeid
    ]
    if ran:
        kinds = sorted({c.kind for c in CASES})
        by_kind = ", ".join(f"{k} {sum(c.kind == k for c in CASES)}" for k in kinds)
        terminalreporter.write_line(f"bad-input table: {len(CASES)} cases ({by_kind}); {len(ran)} ran here")
