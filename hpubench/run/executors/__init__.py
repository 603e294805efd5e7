"""Executors: how one cell gets processes of its own. One interface (``base``), three implementations."""

# How a one-process cell's process starts (``hpubench run --isolation``): forked from a pre-warmed server
# (``fork``) or a fresh interpreter (``spawn``). Declared here, where nothing heavy is imported, so the CLI
# checks the flag without loading the launcher.
ISOLATIONS = ("fork", "spawn")
