"""The shared core: accelerator, strategy, precision and execution mode, resolved from a Cell."""
