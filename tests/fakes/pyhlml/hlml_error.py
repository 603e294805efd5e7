"""Double of ``pyhlml.hlml_error``: the one exception type every HLML call raises."""

from __future__ import annotations

HLML_ERROR_UNINITIALIZED = 1
HLML_ERROR_INVALID_ARGUMENT = 2
HLML_ERROR_NOT_SUPPORTED = 3


class HLMLError(Exception):
    """Carries the library's return code in ``value``, like the real package."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return f"HLML Error with code {self.value}"
