"""The benchmarks' ``--workloads A,B`` argument: the names, or one line saying which are unknown."""

from __future__ import annotations

import workloads


def parse_workloads(text: str) -> tuple[list[str], str | None]:
    """Registered workload names from a comma-separated list, and the problem (one line) if any is unknown
    or none is given."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in workloads.names()]
    if unknown or not names:
        valid = ", ".join(workloads.names())
        return names, f"unknown workload(s) {', '.join(unknown) or '(none given)'}; valid: {valid}"
    return names, None
