"""The CUDA accelerator: the hooks (``accelerator``), the doctor's checks (``doctor``) and CUDA graphs
(``graphs``)."""
