"""The Gaudi (HPU) accelerator: the hooks (``accelerator``) and the bridge facts they rest on, one module
each (device, doctor, envcheck, fp8, graphs, rules). Importing the package registers the accelerator."""

from hpubench.accelerators.hpu.accelerator import HPUAccelerator

__all__ = ["HPUAccelerator"]
