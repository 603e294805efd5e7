"""A size is whatever a registered workload declares, on the command line exactly as in a matrix file.

The command line used to check ``--size`` against the built-in sizes (tiny, standard) while a TOML matrix
checked it against the workload catalog, so ``--size large`` was refused for a plugin that declares
"large" and accepted in a file. Both now go through the size dimension's one parser and the catalog.
"""

from __future__ import annotations

import re
from pathlib import Path

PLUGIN = """
from typing import ClassVar
import workloads
from workloads.base import SizeSpec
from workloads.mlp import MLP

@workloads.register
class Wide(MLP):
    name = "wide"
    sizes: ClassVar[dict[str, SizeSpec]] = {**MLP.sizes, "large": SizeSpec(8, "mlp's tiny model, batch 8")}
"""


def _setup(tmp_path: Path, size: str) -> tuple[Path, Path]:
    plugin = tmp_path / "wide.py"
    plugin.write_text(PLUGIN)
    toml = tmp_path / "m.toml"
    toml.write_text(f'workload = "wide"\nsize = "{size}"\naccelerator = "cpu"\n')
    return plugin, toml


def test_a_plugin_size_is_accepted_on_the_command_line_and_in_a_file(cli, tmp_path):
    plugin, toml = _setup(tmp_path, "large")
    by_flag = cli(
        "list", "cells", "-w", "wide", "--size", "large", "-a", "cpu", "--workloads-from", str(plugin)
    )
    by_file = cli("list", "cells", "--matrix", str(toml), "--workloads-from", str(plugin))
    for proc in (by_flag, by_file):
        assert proc.returncode == 0, proc.stderr
        assert "wide/large/cpu/1x1/32-true/eager/nographs/bsdefault" in proc.stdout


def test_an_unknown_size_is_refused_alike_with_the_valid_sizes(cli, tmp_path):
    plugin, toml = _setup(tmp_path, "huge")
    by_flag = cli(
        "list", "cells", "-w", "wide", "--size", "huge", "-a", "cpu", "--workloads-from", str(plugin)
    )
    by_file = cli("list", "cells", "--matrix", str(toml), "--workloads-from", str(plugin))
    lines = []
    for proc in (by_flag, by_file):
        assert proc.returncode == 2, (proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        [line] = proc.stderr.strip().splitlines()
        lines.append(re.sub(r"^error: matrix '[^']*': ", "", line))  # where differs: 'cli' or 'm'
    assert lines[0] == lines[1]
    assert "'huge'" in lines[0] and "tiny, standard, large" in lines[0]
