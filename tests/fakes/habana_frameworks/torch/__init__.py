"""Double of ``habana_frameworks.torch``: importing any bridge module loads the whole bridge (C12, C13).

As the 1.19 package ``__init__`` does, in order: ``TORCHINDUCTOR_COMPILE_THREADS=1`` (overwritten,
whatever the user set), autoload marked done, torch imported, the torch pin asserted (the major.minor the
bridge was built for, ``required_version.txt``), lazy mode refused on a stock torch (one whose local
version label does not start with "git"), then ``core`` (the mode, read once), ``distributed.hccl``
(its environment set-up runs here, at any bridge import) and ``hpu``. The double's pin and build come
from its knobs (``_double.required_torch_version`` / ``torch_is_fork``).
"""

import os

os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"

import habana_frameworks.autoload

habana_frameworks.autoload.is_loaded = True

# The bridge is a torch extension: torch is imported first, whichever bridge module a program imports
# first. With autoload (C2) that import loads this package from inside torch's own import.
import torch  # noqa: E402, F401

from habana_frameworks import _double  # noqa: E402

__version__ = "1.19.0+testdouble"

_run_time = _double.torch_version()
_compile_time = _double.required_torch_version()
assert _run_time.split(".")[:2] == _compile_time.split(".")[:2], (
    f"Error: Compile-time major/minor PyTorch version {_compile_time} differs from run-time {_run_time}."
)
if os.environ.get("PT_HPU_LAZY_MODE", "1") != "0":
    assert _double.torch_is_fork(), f"Stock PyTorch version {_run_time} is not supported in Lazy mode."

import habana_frameworks.torch.core  # noqa: E402
import habana_frameworks.torch.distributed.hccl  # noqa: E402
import habana_frameworks.torch.hpu  # noqa: E402
