"""Presentation: the command line, terminal tables and exports. Formatting only; decisions live elsewhere."""
