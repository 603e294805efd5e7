"""Cell keys cut to what tells rows apart, for tables that must fit 80 columns.

Pure. A cell key spells every dimension (``mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault``); in one
table most parts are the same on every row, and printing them pushes the figures off an 80-column screen
or folds each key over eight lines. The parts every row shares are said once, above the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SEP = "/"


@dataclass(frozen=True)
class ShortKeys:
    """``short[key]`` is the key's differing parts; ``common`` the shared ones, '*' where rows differ."""

    common: str
    short: dict[str, str]


def shorten(keys: Sequence[str]) -> ShortKeys:
    """Drop the key parts every key shares. One distinct key (or keys of differing shapes) stay whole."""
    distinct = list(dict.fromkeys(keys))
    split = [k.split(SEP) for k in distinct]
    if len(distinct) < 2 or len({len(parts) for parts in split}) != 1:
        return ShortKeys(common="", short={k: k for k in distinct})
    columns = list(zip(*split, strict=True))
    differs = [len(set(col)) > 1 for col in columns]
    common = SEP.join("*" if d else col[0] for d, col in zip(differs, columns, strict=True))
    short = {
        k: SEP.join(p for p, d in zip(parts, differs, strict=True) if d)
        for k, parts in zip(distinct, split, strict=True)
    }
    return ShortKeys(common=common, short=short)
