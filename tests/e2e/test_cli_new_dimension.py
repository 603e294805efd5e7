"""Adding a dimension is one declaration: an installed package registers ``seq_len`` through the entry
point group ``hpubench.dimensions`` (how a third party would add one), and with no other change it shows in
``run --help`` and ``list cells --help``, is read from a matrix file and from its flag, expands into cells
and is part of their keys, while keys at its default stay as they were.

The package is "installed" the way pip leaves one: a module and its ``.dist-info`` (METADATA and
entry_points.txt) on the path of a real ``python -m hpubench`` subprocess.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.pluginsite import install

PLUGIN = """
from hpubench.plan.dimensions import BadValue, Dimension


def parse(value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadValue("seq_len takes whole numbers >= 1, e.g. seq_len = 256")
    return value


SEQ_LEN = Dimension(
    "seq_len",
    "Tokens per sample (a dimension added by a test plugin).",
    parse,
    128,
    text=lambda t: int(t) if t.isdigit() else t,
    example="256",
)
"""
BASE = "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault"


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    env = install(
        tmp_path / "site", "seqlen_plugin", PLUGIN, "hpubench.dimensions", "seq_len = seqlen_plugin:SEQ_LEN"
    )
    return {**env, "XDG_CACHE_HOME": str(tmp_path / "cache")}


@pytest.mark.parametrize("command", [("run",), ("list", "cells"), ("profile",)])
def test_the_new_dimension_is_an_option_with_its_help(cli, plugin_env, tmp_path, command):
    proc = cli(*command, "--help", cwd=tmp_path, env={**plugin_env, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # help wraps at 80 columns
    assert "--seq-len" in text and "added by a test plugin" in text
    plain = cli(*command, "--help", cwd=tmp_path, env={"COLUMNS": "200"})
    assert "--seq-len" not in plain.stdout  # it comes from the plugin, not from hpubench


def test_the_flag_expands_into_cells_and_keys(cli, plugin_env, tmp_path):
    proc = cli(
        "list", "cells", "-w", "mlp", "-a", "cpu", "--seq-len", "256,512", cwd=tmp_path, env=plugin_env
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{BASE}/seq_len=256" in proc.stdout and f"{BASE}/seq_len=512" in proc.stdout
    assert "2 to run" in proc.stdout


def test_a_matrix_file_takes_it_and_its_default_leaves_the_key_as_it_was(cli, plugin_env, tmp_path):
    (tmp_path / "m.toml").write_text('workload = "mlp"\naccelerator = "cpu"\nseq_len = [128, 512]\n')
    proc = cli("list", "cells", "--matrix", "m.toml", cwd=tmp_path, env=plugin_env)
    assert proc.returncode == 0, proc.stderr
    keys = [w for line in proc.stdout.splitlines() for w in line.split() if w.startswith("mlp/")]
    assert keys == [BASE, f"{BASE}/seq_len=512"]


def test_its_parser_refuses_bad_values_on_the_flag_and_in_a_file(cli, plugin_env, tmp_path):
    (tmp_path / "m.toml").write_text('workload = "mlp"\nseq_len = 0\n')
    by_flag = cli("run", "-w", "mlp", "--seq-len", "0", "--out", "o", cwd=tmp_path, env=plugin_env)
    by_file = cli("run", "--matrix", "m.toml", "--out", "o", cwd=tmp_path, env=plugin_env)
    assert (
        by_flag.stderr.strip() == "error: --seq-len '0': seq_len takes whole numbers >= 1; e.g. --seq-len 256"
    )
    assert by_file.stderr.strip().endswith(
        "seq_len = 0: seq_len takes whole numbers >= 1, e.g. seq_len = 256"
    )
    assert by_flag.returncode == by_file.returncode == 2
    assert not (tmp_path / "o").exists()


def test_a_broken_dimension_plugin_is_one_line_naming_it(cli, plugin_env, tmp_path):
    info = tmp_path / "site" / "seqlen_plugin-0.1.dist-info" / "entry_points.txt"
    info.write_text("[hpubench.dimensions]\nseq_len = seqlen_plugin:NO_SUCH_NAME\n")
    proc = cli("list", "cells", "-w", "mlp", cwd=tmp_path, env=plugin_env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "dimension entry point 'seq_len' (seqlen_plugin:NO_SUCH_NAME) failed to load" in line
