"""Matrix files (``--matrix FILE``)."""

from __future__ import annotations

from tests.badinput.cases.table import RUN, add

MATRIX_FILES: list[tuple[str, str, str]] = [
    ("syntax", 'workload = ["mlp"\n', "m.toml"),
    ("not utf8", "workload = '\udcff'\n", "m.toml"),
    ("unknown key", 'workload = "mlp"\nprecison = "bf16-mixed"\n', "precison"),
    ("empty workload list", "workload = []\n", "empty"),
    ("workload number", "workload = 3\n", "workload"),
    ("workload empty string", 'workload = ""\n', "workload"),
    ("workload slash", 'workload = "ml/p"\n', "/"),
    ("size slash", 'workload = "mlp"\nsize = "ti/ny"\n', "/"),
    ("accelerator slash", 'workload = "mlp"\naccelerator = "c/pu"\n', "/"),
    ("precision", 'workload = "mlp"\nprecision = "fp64"\n', "precision"),
    ("precision number", 'workload = "mlp"\nprecision = 32\n', "precision"),
    ("mode", 'workload = "mlp"\nmode = "jit"\n', "mode"),
    ("graphs string", 'workload = "mlp"\ngraphs = "yes"\n', "graphs"),
    ("nodes zero", 'workload = "mlp"\nnodes = 0\n', "nodes"),
    ("nodes float", 'workload = "mlp"\nnodes = 1.5\n', "nodes"),
    ("nodes bool", 'workload = "mlp"\nnodes = true\n', "nodes"),
    ("devices zero", 'workload = "mlp"\ndevices = 0\n', "devices"),
    ("devices string", 'workload = "mlp"\ndevices = "two"\n', "devices"),
    ("devices dup ids", 'workload = "mlp"\ndevices = [[0, 0]]\n', "twice"),
    ("devices neg ids", 'workload = "mlp"\ndevices = [[-1]]\n', "devices"),
    ("devices empty ids", 'workload = "mlp"\ndevices = [[]]\n', "devices"),
    ("batch zero", 'workload = "mlp"\nbatch_size = 0\n', "batch_size"),
    ("batch string", 'workload = "mlp"\nbatch_size = "big"\n', "batch_size"),
    ("batch float", 'workload = "mlp"\nbatch_size = 2.5\n', "batch_size"),
    ("steps one", 'workload = "mlp"\nsteps = 1\n', "steps"),
    ("steps huge", 'workload = "mlp"\nsteps = 1000000000000\n', "steps"),
    ("steps float", 'workload = "mlp"\nsteps = 2.5\n', "steps"),
    ("steps string", 'workload = "mlp"\nsteps = "many"\n', "steps"),
    ("steps list", 'workload = "mlp"\nsteps = [10, 20]\n', "steps"),
    ("warmup zero", 'workload = "mlp"\nwarmup_steps = 0\n', "warmup_steps"),
    ("warmup huge", 'workload = "mlp"\nwarmup_steps = 99999999\n', "warmup_steps"),
    ("target_ci zero", 'workload = "mlp"\nsteps = "auto"\ntarget_ci = 0\n', "target_ci"),
    ("target_ci string", 'workload = "mlp"\nsteps = "auto"\ntarget_ci = "tight"\n', "target_ci"),
    ("max_time negative", 'workload = "mlp"\nsteps = "auto"\nmax_time = -1\n', "max_time"),
    ("min_steps zero", 'workload = "mlp"\nsteps = "auto"\nmin_steps = 0\n', "min_steps"),
    ("options not table", 'workload = "mlp"\noptions = "extra_work=0.1"\n', "options"),
    ("option name", 'workload = "mlp"\noptions = {"bad-name" = 1}\n', "option name"),
    ("option value slash", 'workload = "mlp"\noptions = {extra_work = "0.1/2"}\n', "/"),
    ("option value space", 'workload = "mlp"\noptions = {extra_work = "0 .1"}\n', "spaces"),
    ("option value empty", 'workload = "mlp"\noptions = {extra_work = ""}\n', "non-empty"),
    ("option value table", 'workload = "mlp"\noptions = {extra_work = {a = 1}}\n', "extra_work"),
    ("extra_work nan", 'workload = "mlp"\noptions = {extra_work = nan}\n', "extra_work"),
    ("extra_work inf", 'workload = "mlp"\noptions = {extra_work = inf}\n', "extra_work"),
    ("extra_work negative", 'workload = "mlp"\noptions = {extra_work = -0.5}\n', "extra_work"),
    ("extra_work too big", 'workload = "mlp"\noptions = {extra_work = 50}\n', "extra_work"),
    ("extra_work text", 'workload = "mlp"\noptions = {extra_work = "lots"}\n', "extra_work"),
    ("preset unknown", 'preset = "nightly"\n', "nightly"),
    ("preset number", "preset = 3\n", "preset"),
    ("name number", 'name = 3\nworkload = "mlp"\n', "name"),
    ("grid not table", 'grid = "mlp"\n', "grid"),
    ("grid unknown key", '[[grid]]\nworkload = "mlp"\nsizee = "tiny"\n', "sizee"),
    ("grid bad precision", '[[grid]]\nworkload = "mlp"\nprecision = "fp64"\n', "precision"),
    ("exclude empty", 'workload = "mlp"\n[[exclude]]\n', "exclude"),
    ("exclude auto", 'workload = "mlp"\n[[exclude]]\naccelerator = "auto"\n', "exclude"),
    ("exclude unknown key", 'workload = "mlp"\n[[exclude]]\nprecison = "fp8"\n', "precison"),
    ("exclude bad precision", 'workload = "mlp"\n[[exclude]]\nprecision = "fp64"\n', "precision"),
    ("array of tables top", '[[workload]]\nname = "mlp"\n', "workload"),
    ("empty precision list", 'workload = "mlp"\nprecision = []\n', "empty"),
    ("nested past the parser", "workload = " + "[" * 5000 + "]" * 5000 + "\n", "invalid TOML"),
]
for name, text, fragment in MATRIX_FILES:
    data = text.encode("utf-8", "surrogateescape")
    add("matrix", f"run {name}", [*RUN, "--matrix", "m.toml"], fragment, files={"m.toml": data})
for name, text, fragment in MATRIX_FILES[::3]:
    data = text.encode("utf-8", "surrogateescape")
    add(
        "matrix",
        f"list cells {name}",
        ["list", "cells", "--matrix", "m.toml"],
        fragment,
        files={"m.toml": data},
    )
add("matrix", "directory as matrix", [*RUN, "--matrix", "mdir"], "mdir", files={"mdir/x": "x"})
