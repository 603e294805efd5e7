"""Workloads that leave a process behind (``--workloads-from`` this file), for tests of a cell's whole tree.

In its first real step (not the estimates' count on ``meta``) each ``escape_*`` workload starts
``sleep 600`` in a new session (``start_new_session=True``: out of the cell's process group, as a daemon
or a badly behaved tool would) and appends its pid to the file named by ``HPUBENCH_TEST_PIDFILE``; then
it ends its cell normally (``escape_ok``), fails it (``escape_fail``), hangs until the cell's timeout
(``escape_hang``), or sleeps 0.2 s in every step (``escape_slow``: a run of it can be interrupted part
way). ``die_sigkill`` and ``die_exit3`` end their cell's process abruptly, without a grandchild, for the
wording of a failed cell's reason.
"""

import os
import signal
import subprocess
import time
from typing import ClassVar

import torch
from torch import nn

import workloads
from workloads.base import SizeSpec, Workload

_escaped: list[int] = []


def _escape() -> None:
    """Once per process: a ``sleep 600`` in a session of its own, its pid appended to the pid file."""
    if _escaped:
        return
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    with open(os.environ["HPUBENCH_TEST_PIDFILE"], "a") as f:
        f.write(f"{child.pid}\n")
    _escaped.append(child.pid)


class _Tiny(Workload):
    description = "a linear model whose first real step may leave a process behind"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(4, "tiny"), "standard": SizeSpec(4, "standard")}
    optimizer = "sgd"

    def build_model(self, size):
        return nn.Linear(4, 1)

    def make_batch(self, size, batch_size, device, generator):
        return (torch.randn(batch_size, 4, generator=generator, device=device),)

    def loss(self, model, batch):
        if batch[0].device.type != "meta":  # the estimates' probe counts on meta: leave it alone
            self.misbehave()
        return model(batch[0]).square().mean()

    def misbehave(self):
        pass


@workloads.register
class EscapeOk(_Tiny):
    name = "escape_ok"

    def misbehave(self):
        _escape()


@workloads.register
class EscapeFail(_Tiny):
    name = "escape_fail"

    def misbehave(self):
        _escape()
        raise RuntimeError("escape_fail: this workload always fails")


@workloads.register
class EscapeHang(_Tiny):
    name = "escape_hang"

    def misbehave(self):
        _escape()
        time.sleep(3600)


@workloads.register
class DieSigkill(_Tiny):
    name = "die_sigkill"

    def misbehave(self):
        os.kill(os.getpid(), signal.SIGKILL)


@workloads.register
class DieExit3(_Tiny):
    name = "die_exit3"

    def misbehave(self):
        os._exit(3)


@workloads.register
class EscapeSlow(_Tiny):
    name = "escape_slow"

    def misbehave(self):
        _escape()
        time.sleep(0.2)
