"""How long a rank waits on the process group's collectives (``HPUBENCH_PG_TIMEOUT_S``).

The launcher sets it to the cell's ``--timeout`` in every rank; a user may set it to wait less (find a
hung collective sooner) or more. Read here, torch-free, so ``run`` refuses a bad value before any worker
starts, and each rank reads it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from hpubench.plugins.envlimit import env_seconds

ENV_VAR = "HPUBENCH_PG_TIMEOUT_S"
DEFAULT_S = 1800.0
MAX_S = 7 * 24 * 3600.0  # a week, as --timeout


def pg_timeout_s(env: Mapping[str, str]) -> float:
    """Seconds from ``env``, or the default where unset; a bad value is one UsageError line."""
    return env_seconds(env, ENV_VAR, DEFAULT_S, MAX_S, "a rank waits on a collective", "the cell's --timeout")
