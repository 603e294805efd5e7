"""A time limit read from an environment variable, refused as one usage line when it is not one. Here, at
the bottom layer, because the plugin loader (``files``) reads one and the strategies another.

Shared by the variables ``run`` checks before any worker starts and its children read again
(``HPUBENCH_PLUGIN_IMPORT_TIMEOUT``, ``HPUBENCH_PG_TIMEOUT_S``), so both read a value the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from hpubench.errors import UsageError


def env_seconds(
    env: Mapping[str, str], name: str, default: float, maximum: float, meaning: str, default_text: str = ""
) -> float:
    """``env[name]`` as seconds above 0 and at most ``maximum``, ``default`` where unset or blank.

    ``meaning`` completes "set it to the seconds ..." in the refusal, e.g. "a rank waits on a collective";
    ``default_text`` names the default there where the caller sets another one first.
    """
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= maximum):
        raise UsageError(
            f"{name}={raw!r} is not a time limit; set it to the seconds {meaning} (a number above 0, at most "
            f"{maximum:g}; default {default_text or format(default, 'g')}), or unset it"
        )
    return value
