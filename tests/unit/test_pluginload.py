"""The plugin-import limit (hpubench.plugins.files): its value, and the bound on one import, in-process.

The processes that really import workload files are covered in tests/badinput/test_hung_plugin.py.
"""

from __future__ import annotations

import contextlib
import signal
import time

import pytest

from hpubench.errors import UsageError
from hpubench.plugins import files as pluginload


@pytest.mark.parametrize(
    ("env", "limit"),
    [({}, pluginload.DEFAULT_LIMIT_S), ({pluginload.ENV_VAR: " "}, pluginload.DEFAULT_LIMIT_S)]
    + [({pluginload.ENV_VAR: v}, float(v)) for v in ("0.5", "2", "600", "86400")],
)
def test_the_limit_comes_from_the_environment(env: dict[str, str], limit: float) -> None:
    assert pluginload.import_limit_s(env) == limit


@pytest.mark.parametrize("value", ["0", "-3", "abc", "nan", "inf", "-inf", "1e400", "86401", "5s"])
def test_a_bad_limit_is_one_line_naming_the_variable(value: str) -> None:
    with pytest.raises(UsageError) as exc:
        pluginload.import_limit_s({pluginload.ENV_VAR: value})
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{pluginload.ENV_VAR}={value!r}") and "unset it" in msg


def test_an_import_within_the_limit_returns_its_value_and_leaves_no_alarm() -> None:
    before = signal.getsignal(signal.SIGALRM)

    def quick(path: str) -> str:
        time.sleep(0.2)
        return f"loaded {path}"

    assert pluginload.load_within("p.py", quick, 2.0) == "loaded p.py"
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_hanging_import_is_interrupted_at_the_limit() -> None:
    before = signal.getsignal(signal.SIGALRM)

    def hangs(path: str) -> None:
        with contextlib.suppress(Exception):  # a file's own handler must not swallow the interruption
            time.sleep(30)
        time.sleep(30)

    t0 = time.monotonic()
    with pytest.raises(UsageError) as exc:
        pluginload.load_within("plugins/hang.py", hangs, 0.3)
    assert time.monotonic() - t0 < 2.0
    assert str(exc.value) == pluginload.timed_out_message("plugins/hang.py", 0.3)
    assert "'plugins/hang.py'" in str(exc.value) and "0.3 s" in str(exc.value)
    assert signal.getsignal(signal.SIGALRM) == before


def test_an_error_in_the_import_is_passed_on_unchanged() -> None:
    def broken(path: str) -> None:
        raise UsageError("workload file 'p.py' has a syntax error")

    with pytest.raises(UsageError, match="syntax error"):
        pluginload.load_within("p.py", broken, 5.0)
