"""The CUDA accelerator: the hooks (``accelerator``), the doctor's checks (``doctor``) and CUDA graphs
(``graphs``). Importing the package registers the accelerator."""

from hpubench.accelerators.cuda.accelerator import CUDAAccelerator

__all__ = ["CUDAAccelerator"]
