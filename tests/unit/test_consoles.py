"""The width of piped output: COLUMNS wins when it is a usable width, else 240 columns."""

from __future__ import annotations

import pytest

from hpubench.present.cli.consoles import piped_width


@pytest.mark.parametrize(
    ("columns", "width"),
    [("100", 100), ("40", 40), ("39", 240), ("", 240), ("wide", 240), ("²", 240), ("١٠٠", 240)],
)
def test_columns_is_taken_only_as_a_plain_number_of_at_least_40(
    columns: str, width: int, monkeypatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert piped_width() == width
