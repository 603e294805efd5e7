"""What every report page embeds besides its own data: the stylesheet and script from ``reports/static``,
the plotly.js bundle, and the content security policy that lets only those inline assets run.

Separate so the report (``reports.build``) and the history page (``reports.history``) read each asset
once and embed the very same files under the same policy.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from plotly.offline import get_plotlyjs

CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; font-src data:"
)


@cache
def static(name: str) -> str:
    """A file of ``reports/static``, read once."""
    return resources.files("reports").joinpath("static", name).read_text(encoding="utf-8")


@cache
def plotly_js() -> str:
    """The 4 MB plotly.js bundle, read once, only when a page is made."""
    return get_plotlyjs()
