"""Double of ``habana_frameworks.torch``; importing it alone loads nothing (the mode is fixed by ``core``)."""

__version__ = "1.19.0+testdouble"

# The bridge is a torch extension: torch is imported first, whichever bridge module a program imports
# first. With autoload (C2) that import loads ``core`` from inside torch's own import, after which the
# rest of the double (``hpu``, ``_hbm``) finds torch and ``core`` complete instead of half-initialised.
import torch  # noqa: F401
