"""Baseline directories and the commands that read them (gate, history)."""

from __future__ import annotations

from tests.badinput.cases.table import add
from tests.badinput.records import GOOD, cells_with, with_path

GATE_NAMED = ["gate", "--baseline", "main", "--current", "run", "--baseline-dir", "bl"]
for name, files, fragment in [
    ("index not json", {"bl/index.json": "{oops"}, "index.json"),
    ("index list", {"bl/index.json": "[1]"}, "index.json"),
    ("index wrong version", {"bl/index.json": '{"version": 9, "baselines": {}}'}, "index.json"),
    ("index baselines list", {"bl/index.json": '{"version": 1, "baselines": []}'}, "index.json"),
    ("index entry string", {"bl/index.json": '{"version": 1, "baselines": {"main": "x"}}'}, "index.json"),
    ("index nested past the parser", {"bl/index.json": "[" * 100_000}, "index.json"),
    (
        "baseline cells spoiled",
        {"bl/main/cells.jsonl": cells_with(with_path(GOOD, "step_times_s", "x"))},
        "step_times_s",
    ),
    ("baseline cells not json", {"bl/main/cells.jsonl": b"nope\n"}, "corrupt"),
    ("baseline meta not json", {"bl/main/meta.json": "{"}, "meta.json"),
]:
    if "index" in name:  # gate reads a named baseline's directory, not the index
        if name != "index wrong version":  # found: 'baseline list' shows such an index as empty (exit 0)
            add("baseline", f"list {name}", ["baseline", "list", "--dir", "bl"], fragment, files=files)
    else:
        add("baseline", f"gate {name}", GATE_NAMED, fragment, files=files)
add(
    "baseline",
    "unknown name",
    ["gate", "--baseline", "nosuch", "--current", "run", "--baseline-dir", "bl"],
    "nosuch",
)
add("baseline", "dir is a file", ["baseline", "list", "--dir", "keep.txt"], "keep.txt")
add(
    "baseline",
    "name is the index",
    ["baseline", "save", "run", "--name", "index.json", "--dir", "bl", "--force"],
    "the index's own file name",
)
add(
    "baseline",
    "save beside an unreadable index",
    ["baseline", "save", "run", "--name", "new", "--dir", "bl"],
    "index.json",
    files={"bl/index.json": "{oops"},
)
add("baseline", "save over existing", ["baseline", "save", "run", "--name", "main", "--dir", "bl"], "--force")

# history (hpubench.present.cli.history): saved baselines in, one HTML page out.
for args, fragment in [
    (["history", "--dir", "bl", "-o", "h.html"], "at least 2"),
    (["history", "main", "nosuch", "--dir", "bl", "-o", "h.html"], "nosuch"),
    (["history", "main", "main", "--dir", "bl", "-o", "h.html"], "are the same results"),
    (["history", "--dir", "bl", "--order", "alphabetical", "-o", "h.html"], "--order"),
    (["history", "--dir", "bl", "-o", "h.txt"], "suffix"),
    (["history", "--dir", "bl", "-o", "run/h.html"], "inside the results directory"),
    (["history", "--dir", "bl", "--max-regression", "lots", "-o", "h.html"], "--max-regression"),
    (["history", "--dir", "bl", "--alpha", "2", "-o", "h.html"], "--alpha"),
    (["history", "--dir", "bl", "--alpha", "1e-300", "-o", "h.html"], "at least 1e-06"),
    (["history", "--dir", "bl", "--max-regression", "", "-o", "h.html"], "empty value"),
    # The store's own files and the runs it would sit in are no place for outputs or a store.
    (["report", "run", "-o", "bl/index.json"], "inside the baseline store"),
    (["export", "run", "-o", "bl/index.json"], "inside the baseline store"),
    (
        ["gate", "--baseline", "run", "--current", "run", "--junit", "bl/index.json"],
        "inside the baseline store",
    ),
    (["baseline", "save", "run", "--name", "x", "--dir", "run"], "inside the results directory"),
    (["baseline", "save", "run", "--name", "x", "--dir", "run/sub"], "inside the results directory"),
    (["baseline", "save", "run", "--name", "x", "--dir", ""], "is empty"),
    (["baseline", "list", "--dir", ""], "is empty"),
]:
    add("baseline", " ".join(args), args, fragment)
