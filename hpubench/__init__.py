"""hpubench: training benchmarks on Intel Gaudi (HPU), CUDA GPUs and CPUs, from one shared core."""

__version__ = "0.1.0"
