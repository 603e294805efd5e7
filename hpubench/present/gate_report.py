"""The gate's verdict in three forms: a terminal table, Markdown for a CI job summary, and JUnit XML.

Every form says the same thing in the same order (failing cells first, then the ones worth a look, then
the rest in matrix order), and JUnit marks exactly the cells that fail the gate as failures, so the
red in a CI system's test view always agrees with the exit code.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from hpubench.analysis.gate.outcomes import (
    FAILED,
    FIXED,
    IMPROVEMENT,
    INSUFFICIENT,
    MISSING,
    NEW,
    NO_CHANGE,
    NOISY,
    NOT_COMPARABLE,
    NOT_TESTED,
    NUMERICS_REGRESSION,
    REGRESSION,
    SKIPPED,
    STILL_FAILING,
    CellVerdict,
    GateResult,
    MetricVerdict,
)

_ORDER = {
    NUMERICS_REGRESSION: 0,
    REGRESSION: 0,
    FAILED: 0,
    MISSING: 1,
    NOT_COMPARABLE: 1,
    INSUFFICIENT: 2,
    NOISY: 2,
    IMPROVEMENT: 3,
    FIXED: 3,
    STILL_FAILING: 3,
}
_STYLE = {
    NUMERICS_REGRESSION: "bold red",
    REGRESSION: "bold red",
    FAILED: "bold red",
    MISSING: "yellow",
    NOT_COMPARABLE: "yellow",
    INSUFFICIENT: "yellow",
    NOISY: "yellow",
    IMPROVEMENT: "green",
    FIXED: "green",
    NO_CHANGE: "",
    STILL_FAILING: "dim red",
    NEW: "cyan",
    SKIPPED: "dim",
}
# Cells JUnit reports as skipped: nothing was judged (the others pass or, if they fail the gate, fail).
_NOT_JUDGED = (SKIPPED, NEW, STILL_FAILING, INSUFFICIENT, NOT_COMPARABLE)
_WARN = (MISSING, NOISY, INSUFFICIENT, NOT_COMPARABLE)


def ordered(result: GateResult) -> list[CellVerdict]:
    """Failing cells first, then missing and noisy ones, then improvements, then the rest; stable."""

    def rank(v: CellVerdict) -> int:
        return -1 if v.fails else _ORDER.get(v.outcome, 4)

    return sorted(result.cells, key=rank)


def _change(v: MetricVerdict | None, with_interval: bool = True) -> str:
    if v is None or v.change is None:
        return "-" if v is None or v.decision != NOT_TESTED else "n/a"
    text = f"{v.change:+.1%}"
    if with_interval and v.interval is not None:
        text += f" [{v.interval[0]:+.1%}, {v.interval[1]:+.1%}]"
    return text


def _p(v: MetricVerdict | None) -> str:
    return "-" if v is None or v.p_adjusted is None else f"{v.p_adjusted:.2g}"


def _throughput(v: MetricVerdict | None) -> str:
    if v is None or v.baseline is None or v.current is None:
        return "-"
    return f"{_rate(v.baseline)} -> {_rate(v.current)}"


def _rate(x: float) -> str:
    """Samples/s without an exponent: 31,240 rather than 3.124e+04; small rates keep 3 significant digits."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _detects(v: MetricVerdict | None) -> str:
    """The smallest throughput drop the cell's runs could show (80% power), '>= x' where only a lower
    bound is known (one run a side), 'none' where the runs can never reach significance."""
    if v is None or v.mde is None:
        return "-"
    if v.mde == float("inf"):
        return "none"
    return f"{'>= ' if v.decision == INSUFFICIENT else ''}{v.mde:.1%}"


def _quality(v: CellVerdict) -> str:
    return f"{v.baseline_quality or '-'}/{v.current_quality or '-'}"


def _numerics(v: CellVerdict) -> str:
    return f"{v.baseline_numerics or '-'}/{v.current_numerics or '-'}"


def _mem(v: MetricVerdict | None) -> str:
    if v is None or v.change is None or v.current is None:
        return "-" if v is None else "n/a"
    return f"{v.current / 2**20:,.0f} MiB ({v.change:+.1%})"


def settings_line(result: GateResult) -> str:
    s = result.settings
    return (
        f"fails on a throughput drop > {s.throughput_threshold:.0%} that is significant at alpha {s.alpha:g} "
        f"({s.correction} over {sum(v.throughput is not None for v in result.cells)} tested cells, "
        f"{s.statistic} step time per run, {s.test} test), or peak memory growth > "
        f"{s.memory_threshold:.0%} and > {s.memory_floor_bytes / 2**20:g} MiB, or numerics that regress "
        "(ok -> drift or diverged; a baseline without numerics or unchecked: not compared); "
        f"missing cells: {s.missing}; "
        f"intervals {s.confidence:.0%}, unadjusted; one run a side without a run-to-run spread: "
        "insufficient evidence, never a failure; interfered, recompiled or partial runs: not comparable"
        f"{', a failure (--strict-quality)' if s.strict_quality else ', not a failure'}; "
        "detects: smallest throughput drop the runs could show at 80% power"
    )


def estimator_line(result: GateResult) -> str:
    """Which estimator decided, and why that one: every output names it (compare uses the same one)."""
    return f"estimator: {result.settings.estimator}"


def terminal_table(result: GateResult, title: str = "") -> Table:
    table = Table(
        title=title or result.summary(), caption=f"{settings_line(result)}. {estimator_line(result)}"
    )
    for col, justify in (
        ("cell", "left"),
        ("outcome", "left"),
        (f"samples/s ({result.settings.statistic} step) base -> cur", "right"),
        ("throughput change [CI]", "right"),
        ("p adj", "right"),
        ("detects", "right"),
        ("peak memory", "right"),
        ("runs", "right"),
        ("quality base/cur", "left"),
        ("numerics base/cur", "left"),
        ("why", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for v in ordered(result):
        style = _STYLE.get(v.outcome, "")
        outcome = f"[{style}]{v.outcome}[/]" if style else v.outcome
        table.add_row(
            Text(v.key),
            outcome,
            _throughput(v.throughput),
            _change(v.throughput),
            _p(v.throughput),
            _detects(v.throughput),
            _mem(v.memory),
            f"{v.baseline_runs}/{v.current_runs}",
            _quality(v),
            _numerics(v),
            Text(v.reason),  # text, not markup: a reason may hold "[/]" or "[red]"
        )
    return table


# Characters XML 1.0 cannot carry at all (C0 controls but tab/newline/CR, lone surrogates, U+FFFE/F).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|])")
_CODE_SAFE = re.compile(r"[A-Za-z0-9._=+/:,%-]+")


def _visible(ch: re.Match[str]) -> str:
    """A character that must not pass through, written so a reader still sees what it was."""
    return f"\\x{ord(ch.group()):02x}" if ord(ch.group()) < 0x100 else f"\\u{ord(ch.group()):04x}"


def _xml(text: str) -> str:
    """Text any XML 1.0 parser accepts (markup characters are the XML writer's to escape)."""
    return _NOT_XML.sub(_visible, text)


def _md(text: str) -> str:
    """Plain text inside a Markdown table cell: no raw HTML, no link or code syntax, no extra column."""
    text = _CONTROL.sub(_visible, text.replace("\r\n", " ").replace("\n", " ").replace("\r", " "))
    text = text.replace("&", "&amp;").replace("<", "&lt;")  # no tag or entity can start; ">" alone is text
    return _MD_SPECIAL.sub(r"\\\1", text)


def _code(text: str) -> str:
    """A name as inline code where it holds only name characters, else as escaped plain text."""
    return f"`{text}`" if _CODE_SAFE.fullmatch(text) else _md(text)


_ICON = {True: ":x:", False: ":white_check_mark:"}


def markdown(result: GateResult, baseline_label: str = "baseline", current_label: str = "current") -> str:
    """A self-contained Markdown summary, e.g. for ``$GITHUB_STEP_SUMMARY``."""
    verdict = "passed" if result.passed else "FAILED"
    lines = [
        f"## {_ICON[not result.passed]} hpubench gate {verdict}",
        "",
        f"**{result.summary()}**",
        "",
        f"Baseline {_code(baseline_label)} vs current {_code(current_label)}: {_md(settings_line(result))}.",
        "",
        f"_{_md(estimator_line(result))}_",
        "",
        f"| | cell | outcome | samples/s ({result.settings.statistic} step) base → cur "
        "| throughput change [CI] | p adj | detects | peak memory | runs | quality base/cur "
        "| numerics base/cur | why |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for v in ordered(result):
        icon = ":x:" if v.fails else (":warning:" if v.outcome in _WARN else "")
        outcome = f"**{v.outcome}**" if v.fails else v.outcome
        lines.append(
            "| "
            + " | ".join(
                [
                    icon,
                    _code(v.key),
                    outcome,
                    _md(_throughput(v.throughput).replace("->", "→")),
                    _change(v.throughput),
                    _p(v.throughput),
                    _md(_detects(v.throughput)),
                    _md(_mem(v.memory)),
                    f"{v.baseline_runs}/{v.current_runs}",
                    _quality(v),
                    _numerics(v),
                    _md(v.reason),
                ]
            )
            + " |"
        )
    if result.notes:
        lines += ["", *(f"> **Note:** {_md(n)}" for n in result.notes)]
    return "\n".join(lines) + "\n"


def _details(v: CellVerdict) -> str:
    out = [
        f"outcome: {v.outcome}",
        f"why: {v.reason}",
        f"runs: baseline {v.baseline_runs}, current {v.current_runs}",
        f"quality: baseline {v.baseline_quality or 'unknown'}, current {v.current_quality or 'unknown'}",
        f"numerics: baseline {v.baseline_numerics or 'not recorded'}, current "
        f"{v.current_numerics or 'not recorded'}",
    ]
    for m in (v.throughput, v.memory):
        if m is None:
            continue
        parts = [f"{m.metric}: {m.decision}"]
        if m.change is not None:
            parts.append(f"change {_change(m)}")
        if m.p_value is not None:
            parts.append(f"p {m.p_value:.3g} (adjusted {m.p_adjusted:.3g})")
        parts.append(f"threshold {m.threshold:.0%}")
        if m.mde_text:
            parts.append(f"smallest detectable drop {m.mde_text}")
        parts.append(m.detail)
        out.append("; ".join(parts))
    return "\n".join(out)


def _junit_kind(v: CellVerdict) -> str:
    """failure exactly where the gate fails; skipped where nothing was judged (or missing is ignored)."""
    if v.fails:
        return "failure"
    if v.outcome in _NOT_JUDGED or v.outcome == MISSING:
        return "skipped"
    return "passed"


def junit_xml(
    result: GateResult,
    baseline_label: str = "baseline",
    current_label: str = "current",
    suite_name: str = "hpubench.gate",
) -> bytes:
    """JUnit XML with one test case per cell; a ``<failure>`` exactly where the cell fails the gate."""
    cells: Sequence[CellVerdict] = ordered(result)
    failures = sum(v.fails for v in cells)
    skipped = sum(_junit_kind(v) == "skipped" for v in cells)
    counts = {"tests": str(len(cells)), "failures": str(failures), "errors": "0", "skipped": str(skipped)}
    root = ET.Element("testsuites", {"name": "hpubench gate", **counts, "time": "0"})
    suite = ET.SubElement(root, "testsuite", {"name": suite_name, **counts, "time": "0"})
    props = ET.SubElement(suite, "properties")
    s = result.settings
    for name, value in (
        ("baseline", baseline_label),
        ("current", current_label),
        ("throughput_threshold", s.throughput_threshold),
        ("memory_threshold", s.memory_threshold),
        ("memory_floor_bytes", s.memory_floor_bytes),
        ("alpha", s.alpha),
        ("correction", s.correction),
        ("statistic", s.statistic),
        ("test", s.test),
        ("missing", s.missing),
        ("strict_quality", s.strict_quality),
        ("estimator", s.estimator),
        ("verdict", "passed" if result.passed else "failed"),
    ):
        ET.SubElement(props, "property", {"name": name, "value": _xml(str(value))})
    for v in cells:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": _xml(f"hpubench.analysis.gate.decide.{v.cell.workload}"),
                "name": _xml(v.key),
                "time": "0",
            },
        )
        kind = _junit_kind(v)
        if kind == "failure":
            failure = ET.SubElement(case, "failure", {"message": _xml(v.reason), "type": v.outcome})
            failure.text = _xml(_details(v))
        elif kind == "skipped":
            ET.SubElement(case, "skipped", {"message": _xml(f"{v.outcome}: {v.reason}")})
        out = ET.SubElement(case, "system-out")
        out.text = _xml(_details(v))
    if result.notes:
        ET.SubElement(suite, "system-out").text = _xml("\n".join(result.notes))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
