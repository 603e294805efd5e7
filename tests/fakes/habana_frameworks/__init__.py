"""Test double of Intel Gaudi's ``habana_frameworks`` (the PyTorch bridge), for machines without Gaudi.

It follows ``shared/hpu-api.md`` name for name, but runs everything on host CPU tensors: no figure
produced through it is an HPU figure. The marker below lets hpubench label such results.
"""

__hpubench_test_double__ = True
