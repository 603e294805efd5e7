"""Precision plugins: the names and rules matrix expansion reads (``spec``, no torch) and what a step
applies (``apply``)."""
