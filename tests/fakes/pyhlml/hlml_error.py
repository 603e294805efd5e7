"""Double of ``pyhlml.hlml_error`` (habana-pyhlml 1.24.2.481): ``HLMLError`` and its per-code subclasses.

As in the real module, ``HLMLError(code)`` returns an instance of the code's subclass
(``HLMLError_Uninitialized`` for 1, ``HLMLError_NotSupported`` for 3, ...) once ``ErrorsAsClass()`` has
made them, and ``ErrorsAsClass()`` runs inside ``hlmlInit``: before the first ``hlmlInit`` the subclasses
do not exist and ``HLMLError(code)`` is the base class. ``str()`` is ``"HLML Error with code <code>"`` and
``==`` compares the codes (the real class defines ``__eq__`` only, so its instances are unhashable).
"""

from __future__ import annotations

import sys
from string import capwords
from typing import Any, ClassVar

# pyhlml_types_generated.HLML_RETURN (1.24.2.481, lines 18-31), less HLML_SUCCESS
HLML_ERROR_UNINITIALIZED = 1
HLML_ERROR_INVALID_ARGUMENT = 2
HLML_ERROR_NOT_SUPPORTED = 3
HLML_ERROR_ALREADY_INITIALIZED = 5
HLML_ERROR_NOT_FOUND = 6
HLML_ERROR_INSUFFICIENT_SIZE = 7
HLML_ERROR_DRIVER_NOT_LOADED = 9
HLML_ERROR_TIMEOUT = 10
HLML_ERROR_AIP_IS_LOST = 15
HLML_ERROR_MEMORY = 20
HLML_ERROR_NO_DATA = 21
HLML_ERROR_UNKNOWN = 49

ERROR_CODES: dict[str, int] = {
    name: value for name, value in dict(globals()).items() if name.startswith("HLML_ERROR_")
}


class HLMLError(Exception):
    """Carries the library's return code in ``value``, like the real package; ``HLMLError(code)`` is an
    instance of the code's subclass once ``ErrorsAsClass`` has run (at ``hlmlInit``)."""

    _cMap: ClassVar[dict[int, type[HLMLError]]] = {}
    value: int

    def __new__(cls, value: int) -> HLMLError:
        if cls is HLMLError:
            cls = HLMLError._cMap.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self) -> str:
        return f"HLML Error with code {self.value}"

    def __eq__(self, other: Any) -> bool:
        return bool(self.value == other.value)

    __hash__ = None  # type: ignore[assignment]  # what defining __eq__ alone leaves the real class with


def _fixed_code(code: int) -> Any:
    """A subclass's ``__new__``: it takes no code, its own is fixed (the real subclasses take none)."""

    def new(cls: type[HLMLError]) -> HLMLError:
        return HLMLError.__new__(cls, code)

    return new


def ErrorsAsClass() -> None:
    """Make ``HLMLError_<CapWords>`` for every code and map the code to it, as ``hlmlInit`` does."""
    module = sys.modules[__name__]
    for name, code in ERROR_CODES.items():
        class_name = "HLMLError_" + capwords(name.replace("HLML_ERROR_", ""), "_").replace("_", "")
        cls = type(class_name, (HLMLError,), {"__new__": _fixed_code(code)})
        cls.__module__ = __name__
        setattr(module, class_name, cls)
        HLMLError._cMap[code] = cls
