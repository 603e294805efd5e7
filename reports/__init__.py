"""HTML reports and comparisons of hpubench result sets, plus csv/parquet/json exports of the same table.

Pages are single self-contained files (styles, scripts, plotly.js and the data inline) so they can be
mailed, archived next to the results, and opened years later without a network. The logic they show
(prices, MFU, matching, ratios, geometric means, the Pareto frontier) lives in the pure modules
:mod:`hpubench.analysis.economics` and :mod:`hpubench.analysis.compare`; this package only lays it out.
"""

from reports.api import FORMATS, ReportSummary, comparison, report

__all__ = ["FORMATS", "ReportSummary", "comparison", "report"]
