"""The run directory's file names: what the writer (:mod:`hpubench.store.rundir`) lays out and the readers
(:mod:`hpubench.store.readback`, reports, baselines) look for.

A module of its own so the reader and the writer share the names without importing each other.
"""

from __future__ import annotations

CELLS_FILE = "cells.jsonl"
META_FILE = "meta.json"
LOGS_DIR = "logs"
