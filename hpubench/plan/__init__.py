"""Planning a run before anything starts: the dimensions, the matrix and its Cells, estimates, budgets,
shards.

Pure: no torch, no device. Everything here can be asked of any machine (``list cells``, ``doctor``).
"""
