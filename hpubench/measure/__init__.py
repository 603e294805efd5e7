"""Measuring inside a cell's process: timed steps, when to stop, the conditions a figure was taken under,
memory, telemetry, profiles, and the FLOP/rate probes the estimates rest on.
"""
