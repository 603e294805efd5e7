"""Executors: how one cell gets processes of its own. One interface (``base``), three implementations."""
