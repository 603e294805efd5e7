"""Callbacks that record a user's own training run (Lightning's or Hugging Face's Trainer) as hpubench
records: the same warm-up rule, step clock, interval and verdicts as a cell, written to a run directory
that ``results``, ``report``, ``compare``, ``gate`` and ``baseline save`` read like any run.

``recorder`` holds what both callbacks share (step boundaries in, a record out); ``lightning`` and
``transformers`` only translate their framework's hooks and settings. Importing this package imports
neither framework.
"""
