"""Running the plan: the scheduler, the executors (pre-warmed fork, spawn, distributed), the worker in each
cell's process, and the process hygiene around them (timeouts, process trees, interrupts, locks on the way).
"""
