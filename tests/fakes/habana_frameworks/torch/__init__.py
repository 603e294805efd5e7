"""Double of ``habana_frameworks.torch``; importing it alone loads nothing (the mode is fixed by ``core``)."""

__version__ = "1.19.0+testdouble"
