# Fresh-machine entry points (see README): `make smoke` runs the smoke matrix here and writes results and
# a report; `make test` installs and runs the test suite. Both install first.
PY ?= python3
# torch is installed only when absent: a torch already there (Habana's build on Gaudi, a CUDA build on
# GPUs) is never replaced. 2.13.0 is the CPU build this project is developed and tested with.
TORCH_SPEC ?= torch==2.13.0
RUN_DIR ?= results/smoke

.PHONY: install hf lightning browser compiler smoke test test-quick bench bench-threads bench-heap gpu-check hpu-check report-png lint format

install:
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install "$(TORCH_SPEC)"
	$(PY) -m pip install -e ".[dev]"
	@# Byte-compile the checkout, as pip does for a regular install: an editable one leaves it to the first
	@# import, which never writes it where PYTHONDONTWRITEBYTECODE is set, and every process then compiles
	@# hpubench again. A module edited later no longer matches its .pyc and is compiled afresh on import.
	$(PY) -m compileall -q hpubench workloads benchmarks

# The hf extra (transformers) for the hf: workload tests; best effort: where it cannot be installed
# (no index, an old Python) those tests skip with the reason instead of the whole install failing.
hf:
	@$(PY) -c "import transformers, accelerate" 2>/dev/null || $(PY) -m pip install -e ".[hf]" || \
	  echo "note: the hf extra did not install; the hf: workload tests will skip"

# The lightning extra for the Lightning callback and lightning: workload tests, and the `lightning` package
# beside it (the callback serves both imports); best effort, as hf.
lightning:
	@$(PY) -c "import pytorch_lightning, lightning" 2>/dev/null || $(PY) -m pip install -e ".[lightning]" lightning || \
	  echo "note: the lightning extra did not install; the Lightning tests will skip"

# The report is written even when a cell failed (it lists failures with reasons); the run's exit code is kept.
# It goes beside the run directory, never into it (outputs never land among a run's records).
smoke: install
	@$(PY) -m hpubench run --matrix smoke --out $(RUN_DIR) --resume; rc=$$?; \
	  $(PY) -m hpubench report $(RUN_DIR) -o $(RUN_DIR).html && echo "report: $(RUN_DIR).html"; \
	  exit $$rc

# Headless Chromium (Debian's package) for the HTML report tests; installed only when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

# A C++ compiler for the HPU test double's device runtime (tests/fakes, built once per torch install).
compiler:
	@command -v g++ >/dev/null 2>&1 || { \
	  SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq g++; }

# Two passes. Most tests run on TEST_WORKERS pytest-xdist workers (one per core of CI's 2); those marked
# `serial` (their outcome rests on timing a real run, or on the machine being otherwise idle) run after, alone.
# Both passes run, and either failing fails the target. The 15 slowest tests of each are listed at the end:
# where the suite's time goes, run after run (CI's budget).
TEST_WORKERS ?= 2
test: install hf lightning browser compiler
	@rc=0; \
	  $(PY) -m pytest -q -n $(TEST_WORKERS) -m "not serial" --durations=15 || rc=1; \
	  $(PY) -m pytest -q -m serial --durations=15 || rc=1; \
	  exit $$rc

# The edit loop: unit, contract, bad-input and golden tests, without the slow-marked ones (real training in
# subprocesses) and without installing (an installed dev environment is assumed; only the C++ compiler the HPU
# test double builds with is checked). Aimed at under 3 minutes on 2 cores. CI runs everything: `make test`.
# QUICK_ARGS adds pytest options, e.g. make test-quick QUICK_ARGS="-k gate -x".
# Any order is safe: tests/conftest.py loads the HPU double's device runtime before any test runs a backward
# (tests/integration/test_suite_order.py).
QUICK_DIRS ?= tests/badinput tests/contract tests/unit tests/golden
QUICK_ARGS ?=
test-quick: compiler
	$(PY) -m pytest -q -m "not slow" $(QUICK_ARGS) $(QUICK_DIRS)

# Figures, not tests: harness/bare throughput and per-cell cost, run-to-run spread and the collapse guard,
# agreement with a plain script under both host conditions, and the timing verdicts' rates on quiet runs. bench-threads re-measures the CPU thread policies (the README's table; ~15 min on 2 cores),
# bench-heap the heap policies (HPUBENCH_MALLOC; ~4 min).
# AGREEMENT_ROUNDS: agreement.py's interleaved rounds. Its ratios of single rounds spread far wider than its
# 0.98-1.02 band on a shared 2-core VM, so five rounds (the script's own default) seldom decide a row.
AGREEMENT_ROUNDS ?= 20
bench: install hf lightning browser
	$(PY) benchmarks/overhead.py
	$(PY) benchmarks/trust.py
	$(PY) benchmarks/agreement.py --rounds $(AGREEMENT_ROUNDS)
	$(PY) benchmarks/trainer_agreement.py
	$(PY) benchmarks/report_scale.py
	$(PY) benchmarks/verdict_rates.py

bench-threads: install
	$(PY) benchmarks/threads.py

bench-heap: install
	$(PY) benchmarks/heap.py

# The CUDA paths once each on this machine's GPUs (benchmarks/gpu-check.toml), with a table; exit 2 without a GPU.
gpu-check: install
	$(PY) benchmarks/gpu_check.py

# The HPU paths once each on this machine's Gaudi modules (benchmarks/hpu-check.toml): a table and one JSON to
# send back (results/hpu-check/hpu-check.json); exit 1 when a cell failed, 2 without an HPU.
hpu-check: install
	$(PY) benchmarks/hpu_check.py

# docs/report.png (the README's picture): a small CPU run kept only when every cell is judged ok (retried
# otherwise), its report, and a headless-Chromium screenshot of the page's top; prints the figures shown.
report-png: install browser
	$(PY) benchmarks/report_png.py

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format:
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .
