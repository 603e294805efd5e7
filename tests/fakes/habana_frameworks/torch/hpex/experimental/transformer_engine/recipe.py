"""Double of transformer_engine's ``recipe``: the scaling recipe handed to ``fp8_autocast``.

The fields are the usual delayed-scaling knobs; the double stores them and does not scale anything.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Format(enum.Enum):
    E4M3 = "E4M3"
    E5M2 = "E5M2"
    HYBRID = "HYBRID"  # E4M3 forward, E5M2 backward


@dataclass
class DelayedScaling:
    margin: int = 0
    interval: int = 1
    fp8_format: Format = Format.HYBRID
    amax_history_len: int = 1
    amax_compute_algo: str = "most_recent"
