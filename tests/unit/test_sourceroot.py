"""The processes hpubench starts run this very copy: its source root first on PYTHONPATH, and only it."""

import os
import subprocess
import sys
from pathlib import Path

from hpubench.run.executors.base import WorkerSetup
from hpubench.run.sourceroot import SOURCE_ROOT, with_source_root


def test_the_source_root_holds_the_packages_the_children_import():
    root = Path(SOURCE_ROOT)
    assert (root / "hpubench" / "__init__.py").is_file()
    assert (root / "workloads" / "__init__.py").is_file()


def test_the_root_goes_first_once_and_the_users_path_stays():
    env = with_source_root({"PYTHONPATH": os.pathsep.join(["/a", SOURCE_ROOT, "/b"]), "X": "1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [SOURCE_ROOT, "/a", "/b"]
    assert env["X"] == "1"
    assert with_source_root({})["PYTHONPATH"] == SOURCE_ROOT


def test_a_child_started_elsewhere_imports_this_copy_and_no_subpackage_module_at_top_level(tmp_path):
    # From a folder that is not the clone, with no installed copy in the way (-S: no site-packages),
    # the child finds this hpubench through the path alone, and a subpackage's module name ("worker",
    # "matrix") stays free at top level for other packages.
    code = (
        "import importlib.util, hpubench as h;"
        "print(h.__file__);"
        "print(importlib.util.find_spec('worker'), importlib.util.find_spec('matrix'))"
    )
    env = with_source_root({k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == str(Path(SOURCE_ROOT) / "hpubench" / "__init__.py")
    assert out[1] == "None None"


def test_every_worker_process_starts_with_the_root_first_on_its_path():
    setup = WorkerSetup(sys.executable, [], {"PYTHONPATH": "/user/lib"})
    try:
        env = setup.env((("PT_HPU_AUTOLOAD", "0"),))
    finally:
        setup.remove_scratch()
    assert env["PYTHONPATH"].split(os.pathsep) == [SOURCE_ROOT, "/user/lib"]
    assert env["PT_HPU_AUTOLOAD"] == "0"
