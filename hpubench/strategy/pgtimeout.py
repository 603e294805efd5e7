"""How long a rank waits on the process group's collectives (``HPUBENCH_PG_TIMEOUT_S``).

The launcher sets it to the cell's ``--timeout`` in every rank; a user may set it to wait less (find a
hung collective sooner) or more. Read here, torch-free, so ``run`` refuses a bad value before any worker
starts, and each rank reads it the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from hpubench.errors import UsageError

ENV_VAR = "HPUBENCH_PG_TIMEOUT_S"
DEFAULT_S = 1800.0
MAX_S = 7 * 24 * 3600.0  # a week, as --timeout


def pg_timeout_s(env: Mapping[str, str]) -> float:
    """Seconds from ``env``, or the default where unset; a bad value is one UsageError line."""
    raw = (env.get(ENV_VAR) or "").strip()
    if not raw:
        return DEFAULT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_S):
        raise UsageError(
            f"{ENV_VAR}={raw!r} is not a time limit; set it to the seconds a rank waits on a collective "
            f"(a number above 0, at most {MAX_S:g}; by default the cell's --timeout), or unset it"
        )
    return value
