"""A chatty cell's log is capped (issue 14 item 3): head and tail kept, the cut said in the log itself."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from reportdata import hpubench_cli

LOG_CAP_BYTES = 4 * 2**20  # hpubench.run.logcap.LOG_CAP_BYTES

CHATTY = textwrap.dedent(
    """
    import sys
    from workloads import register
    from workloads.mlp import MLP

    @register
    class Chatty(MLP):
        name = "chatty"

        def build_model(self, size):
            print("HEAD-MARK", flush=True)
            line = "y" * 1023 + "\\n"
            for _ in range(12 * 1024):  # 12 MiB, three times the cap
                sys.stdout.write(line)
            print("TAIL-MARK", flush=True)
            return super().build_model(size)
    """
)


def test_a_cell_log_keeps_head_and_tail_and_says_how_much_was_cut(tmp_path: Path) -> None:
    plugin = tmp_path / "chatty.py"
    plugin.write_text(CHATTY)
    run = tmp_path / "run"
    args = ["run", "-w", "chatty", "--steps", "3", "--warmup-steps", "1", "-o", str(run)]
    proc = hpubench_cli(*args, "--workloads-from", str(plugin))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (rec,) = [json.loads(ln) for ln in (run / "cells.jsonl").read_text().splitlines()]
    assert rec["status"] == "ok"
    (log,) = (run / "logs").glob("chatty*.log")
    size = log.stat().st_size
    assert size <= LOG_CAP_BYTES + 1024, size
    text = log.read_text()
    assert "HEAD-MARK" in text[: 64 * 1024]
    assert "TAIL-MARK" in text[-(LOG_CAP_BYTES // 2) :]
    cut = re.search(r"hpubench: (\d+) bytes cut", text)
    assert cut is not None and int(cut.group(1)) >= 12 * 2**20 - LOG_CAP_BYTES
