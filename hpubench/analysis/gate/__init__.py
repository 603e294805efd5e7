"""Regression gating, one module per step: inputs, rules, verdicts, outcomes, notes, and ``decide`` over a
matrix."""
