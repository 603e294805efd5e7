# Fresh-machine entry points (see README): `make smoke` runs the smoke matrix here and writes results and
# a report; `make test` installs and runs the test suite. Both install first.
PY ?= python3
# torch is installed only when absent: a torch already there (Habana's build on Gaudi, a CUDA build on
# GPUs) is never replaced. 2.13.0 is the CPU build this project is developed and tested with.
TORCH_SPEC ?= torch==2.13.0
RUN_DIR ?= results/smoke

.PHONY: install smoke test bench lint format

install:
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install "$(TORCH_SPEC)"
	$(PY) -m pip install -e ".[dev]"

smoke: install
	$(PY) -m hpubench run --matrix smoke --out $(RUN_DIR) --resume
	$(PY) -m hpubench results $(RUN_DIR)

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) benchmarks/overhead.py

lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format:
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .
