"""The bad-input table: every case is a command line, the files and environment it meets, and a fragment
the one-line error must contain. Grouped by what the input is (the ``kind``); generated rows are products
of a flag and its bad values, each a separate case.

Every case runs in an empty directory holding ``keep.txt``, a good run ``run/`` (one ok record) and a
saved baseline ``bl/main`` of it, plus the case's own files; all of them must be byte-identical after the
refused call. No case may start a worker: argument and file validation come first.
"""

from __future__ import annotations

from tests.badinput.cases import baselines, cli, env, matrix, prices, results
from tests.badinput.cases.table import CASES, Case

KINDS = (cli, matrix, results, prices, baselines, env)  # imported for the cases each adds to CASES

__all__ = ["CASES", "KINDS", "Case"]
