"""The command line: one module per command group, registered on the typer app in ``main``."""
