"""Workloads for tests of what a run keeps while a cell measures (``--workloads-from`` this file).

Every training step sleeps 0.1 s, so step times are known from below and a cell measures long enough to
be watched, timed out or crashed part way. The crashing ones die during their 11th step: measured step
7 (0-based) of a cell with 2 warm-up steps and the lead-in. Steps on the ``meta`` device (FLOP counting)
do not count.
"""

import os
import signal
import time
from typing import ClassVar

import torch
from torch import nn

import workloads
from workloads.base import SizeSpec, Workload

STEP_SLEEP_S = 0.1
DIE_AT_CALL = 11

_calls = {"n": 0}


class _Sleepy(Workload):
    description = "a linear model whose every step sleeps 0.1 s"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(8, "tiny"), "standard": SizeSpec(8, "standard")}
    optimizer = "sgd"

    def build_model(self, size):
        return nn.Linear(4, 1)

    def make_batch(self, size, batch_size, device, generator):
        return (torch.randn(batch_size, 4, generator=generator, device=device),)

    def loss(self, model, batch):
        if batch[0].device.type != "meta":
            _calls["n"] += 1
            time.sleep(STEP_SLEEP_S)
            if _calls["n"] == DIE_AT_CALL:
                self.die()
        return model(batch[0]).square().mean()

    def die(self):
        pass


@workloads.register
class Sleepy(_Sleepy):
    name = "sleepy"


@workloads.register
class SegvAtStep(_Sleepy):
    name = "segv_at_step"

    def die(self):
        os.kill(os.getpid(), signal.SIGSEGV)


@workloads.register
class ExitAtStep(_Sleepy):
    name = "exit_at_step"

    def die(self):
        os._exit(1)
