"""HPUBENCH_PG_TIMEOUT_S: read the same way by ``run``'s checks and by every rank."""

from __future__ import annotations

import pytest

from hpubench.errors import UsageError
from hpubench.strategy.pgtimeout import DEFAULT_S, ENV_VAR, MAX_S, pg_timeout_s


def test_unset_or_blank_is_the_default_and_a_number_is_taken() -> None:
    assert pg_timeout_s({}) == pg_timeout_s({ENV_VAR: " "}) == DEFAULT_S
    assert pg_timeout_s({ENV_VAR: "90"}) == 90.0
    assert pg_timeout_s({ENV_VAR: str(MAX_S)}) == MAX_S


@pytest.mark.parametrize("raw", ["abc", "0", "-1", "nan", "inf", "1e9", "5s"])
def test_a_value_that_is_no_time_limit_is_one_usage_line(raw: str) -> None:
    with pytest.raises(UsageError, match=rf"^{ENV_VAR}='{raw}' is not a time limit; .*or unset it$"):
        pg_timeout_s({ENV_VAR: raw})
