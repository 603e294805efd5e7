"""Analysis of stored results: statistics, quality verdicts, compare, gate, scaling, pricing.

Pure: no torch, no I/O.
"""
