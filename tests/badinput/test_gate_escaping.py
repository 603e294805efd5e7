"""Issue 14 item 6: gate output for machines stays well-formed whatever a record's names and reasons hold.

A failed cell's reason is the child's exception text and a cell's workload name comes from a plugin or a
result file from elsewhere: either may carry control characters, HTML or Markdown syntax. The JUnit file
must parse with a strict XML parser, and the Markdown summary must keep its table and carry no live HTML.
"""

from __future__ import annotations

import io
import re
import xml.dom.minidom

import numpy as np
from rich.console import Console

from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.rules import GateSettings
from hpubench.plan.cell import Cell
from hpubench.present.gate_report import junit_xml, markdown, terminal_table
from hpubench.store.record import CellResult
from tests.unit.gatedata import make_side

NASTY_REASON = (
    "RuntimeError: \x00\x1b[31mred\x07 <script>alert(1)</script> & [x](javascript:alert(1)) `a|b` [/]"
)
NASTY_WORKLOAD = "<img src=x onerror=alert(1)>`|"


def nasty_result():
    rng = np.random.default_rng(0)
    plain, odd = Cell("mlp"), Cell(NASTY_WORKLOAD)
    base = make_side(rng, [plain, odd], repeats=3, n=20, cv=0.02)
    cur = [CellResult(plain, "failed", reason=NASTY_REASON), *make_side(rng, [odd], repeats=3, n=20, cv=0.02)]
    return gate(base, cur, GateSettings())


def test_junit_with_control_characters_parses_strictly() -> None:
    data = junit_xml(nasty_result(), "main\x01", "pr\x1b")
    doc = xml.dom.minidom.parseString(data)  # expat: rejects control characters outright
    failures = doc.getElementsByTagName("failure")
    assert len(failures) == 1
    message = failures[0].getAttribute("message")
    assert "<script>alert(1)</script>" in message  # kept as text, escaped by the XML writer
    assert "\\x1b" in message and "\x1b" not in message  # shown, not passed through


def _table_rows(md: str) -> list[str]:
    return [ln for ln in md.splitlines() if ln.startswith("| ")]


def test_markdown_carries_no_raw_html_and_keeps_its_table() -> None:
    md = markdown(nasty_result(), "main<b>", "pr`x`")
    assert "<script" not in md and "<img" not in md and "<b>" not in md
    assert "&lt;script>" in md
    assert "\x1b" not in md and "\x00" not in md and "\x07" not in md
    assert not re.search(r"(?<!\\)\]\(javascript:", md)  # no live link
    rows = _table_rows(md)
    header_cells = len(re.split(r"(?<!\\)\|", rows[0]))
    for row in rows:
        assert len(re.split(r"(?<!\\)\|", row)) == header_cells, row  # no unescaped pipe adds a column
        # a stray backtick would open a code span swallowing the rest of the row
        assert len(re.findall(r"(?<!\\)`", row)) % 2 == 0, row


def test_terminal_table_takes_reasons_as_text_not_markup() -> None:
    console = Console(file=io.StringIO(), width=400)
    console.print(terminal_table(nasty_result()))  # '[/]' in a reason must not be read as markup
    assert "[/]" in console.file.getvalue()
