"""Pure statistics: step-time summaries, run locations, tests of a ratio, corrections, and the estimator
compare and gate share."""
