"""The Gaudi (HPU) accelerator: the hooks (``accelerator``) and the bridge facts they rest on, one module
each."""
