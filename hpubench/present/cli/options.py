"""Command-line options made from the dimension declarations: one typer option per dimension.

A command that takes matrix dimensions declares one parameter ``dims`` and is decorated with
:func:`dimension_options`; typer then sees, in the place of ``dims``, one option per dimension of
``hpubench.plan.dimensions`` (its flags, its help), and the command receives them back as
``dims: dict[str, list[str] | None]`` (name -> the flag's strings, None where not given), ready for
``cliparse.parse_dimensions``. A dimension registered by a plugin appears in ``--help`` with no change here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from hpubench.errors import UsageError
from hpubench.plan import dimensions

F = TypeVar("F", bound=Callable[..., Any])
_PREFIX = "dim_"  # parameter names; typer shows the flags, so a dimension cannot clash with "out", ...


def dimension_options(func: F) -> F:
    """Replace ``func``'s ``dims`` parameter by one option per dimension (see the module docstring).

    Calling the decorated function directly with ``dims=...`` (as ``profile`` calls ``run``) passes it on.
    """
    try:
        dims = dimensions.all_dimensions()
    except UsageError:  # a broken plugin: the command reports it as one line when it parses its flags
        dims = dimensions.BUILTIN
    sig = inspect.signature(func, eval_str=True)
    params = list(sig.parameters.values())
    at = [p.name for p in params].index("dims")
    options = [
        inspect.Parameter(
            _PREFIX + d.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=None,
            annotation=Annotated[list[str] | None, typer.Option(*d.cli_flags, help=d.help)],
        )
        for d in dims
    ]
    new = [*params[:at], *options, *params[at + 1 :]]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "dims" not in kwargs:
            kwargs["dims"] = {d.name: kwargs.pop(_PREFIX + d.name, None) for d in dims}
        return func(*args, **kwargs)

    wrapper.__signature__ = sig.replace(parameters=new)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in new}
    return wrapper  # type: ignore[return-value]
