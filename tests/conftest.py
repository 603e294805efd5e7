"""Session-wide result sets for the report and compare tests (tests/integration, tests/e2e), the HLML
double in process (``pyhlml``, for the contract and integration tests), and what makes a test process
the same whichever tests ran before it in that process (or beside it, under pytest-xdist)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hpudouble import fresh_pyhlml, load_runtime_early
from reportdata import DOUBLE, PAYLOAD, SMOKE_ARGS, fake_result, hpubench_cli, write_run

from hpubench.store.record import STATUS_FAILED

# Fixtures that import the HPU double into the test process (tests/contract/conftest.py's ``bridge``, the
# ``load`` of the in-process HPU tests).
IN_PROCESS_DOUBLE = frozenset({"bridge", "load"})


def _own_temp_dir_per_worker() -> None:
    """Under pytest-xdist each worker, and every process it starts, gets a temp dir of its own: the HPU
    double keeps its box of cards there (tests/fakes/habana_frameworks/_cards.py), and two workers sharing
    one would take each other's cards as two users of one Gaudi machine do."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        own = Path(tempfile.gettempdir()) / f"hpubench-tests-{worker}"
        own.mkdir(exist_ok=True)
        os.environ["TMPDIR"] = str(own)
        tempfile.tempdir = None  # gettempdir() caches its answer; the next call reads TMPDIR


def _drop_terminal_size() -> None:
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
        os.unsetenv(name)


# Before any test module is imported: hpubench's consoles take their width when first imported, and a
# pytest-xdist worker starts with COLUMNS=80 in its environment.
_drop_terminal_size()
_own_temp_dir_per_worker()


def pytest_collection_finish(session: pytest.Session) -> None:
    if any(IN_PROCESS_DOUBLE & set(getattr(item, "fixturenames", ())) for item in session.items):
        load_runtime_early()


@pytest.fixture(autouse=True)
def _no_terminal_size_in_env() -> None:
    """No COLUMNS / LINES for the CLIs the tests start: a shell that exports COLUMNS would turn the CLI's
    piped tables and progress lines 80 columns wide (the narrow-terminal tests set it themselves). Unset
    at the C level too: during this suite something sets COLUMNS=80 and LINES=24 in the process's own
    environment without Python's ``os.environ`` seeing it (seen once transformers was installed), and a
    child started with ``env=None`` inherits that, not ``os.environ``."""
    _drop_terminal_size()


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two real CPU runs standing in for two hardware kinds: default threads, and one thread (repeated
    twice, with a memory timeline, so repetitions and timelines are exercised on real records too)."""
    root = tmp_path_factory.mktemp("smoke")
    a, b = root / "cpu-default", root / "cpu-1thread"
    runs = (
        (a, ("--memory-every", "1"), {}),
        (b, ("--repeat", "2"), {"OMP_NUM_THREADS": "1"}),
    )
    for out, extra, env in runs:
        proc = hpubench_cli("run", *SMOKE_ARGS, *extra, "-o", str(out), env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
    return a, b


@pytest.fixture(scope="session")
def hw_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Gaudi, Gaudi2 (with a scaling series, a memory timeline and a failure), Gaudi3 from the test double,
    an H100, and a run whose host, workload, env values and failure reason carry a script payload."""
    root = tmp_path_factory.mktemp("hw")
    gaudi = [
        fake_result("bert", "hpu", "GAUDI", step_s=0.20, tokens_per_sample=128),
        fake_result("resnet", "hpu", "GAUDI", step_s=0.10, seed=1),
    ]
    gaudi2 = [
        fake_result("bert", "hpu", "GAUDI2", step_s=0.08, tokens_per_sample=128, timeline=True),
        fake_result("resnet", "hpu", "GAUDI2", step_s=0.04, seed=1),
        *(
            fake_result(
                "resnet",
                "hpu",
                "GAUDI2",
                devices=d,
                nodes=n,
                step_s=0.04 * (1 + 0.02 * d * n),
                seed=d + n,
            )
            for d, n in ((2, 1), (4, 1), (8, 1), (8, 2))
        ),
        fake_result("gpt", "hpu", "GAUDI2", status=STATUS_FAILED, reason="RuntimeError: synapse OOM"),
    ]
    gaudi3 = [
        fake_result(
            "bert",
            "hpu",
            "GAUDI3",
            step_s=0.05,
            tokens_per_sample=128,
            software=DOUBLE,
        )
    ]
    h100 = [
        fake_result(
            "bert",
            "cuda",
            "NVIDIA H100 80GB HBM3",
            step_s=0.04,
            tokens_per_sample=128,
            memory_source="torch.cuda.memory_stats",
        ),
        fake_result(
            "resnet",
            "cuda",
            "NVIDIA H100 80GB HBM3",
            precision="32-true",
            step_s=0.05,
            env_flags={"allow_tf32_matmul": "True"},
            memory_source="torch.cuda.memory_stats",
            seed=1,
        ),
    ]
    evil = [
        fake_result(f"gpt{PAYLOAD}", "hpu", "GAUDI2", env_flags={"PT_HPU_LAZY_MODE": PAYLOAD}),
        fake_result("mlp", "hpu", "GAUDI2", status=STATUS_FAILED, reason=f"ValueError: {PAYLOAD}"),
    ]
    return {
        "gaudi": write_run(root / "gaudi", gaudi),
        "gaudi2": write_run(root / "gaudi2", gaudi2),
        "gaudi3": write_run(root / "gaudi3", gaudi3),
        "h100": write_run(root / "h100", h100),
        "evil": write_run(root / "evil", evil, hostname=f"host{PAYLOAD}"),
    }


@pytest.fixture
def pyhlml(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The pyhlml double, imported fresh (``hpudouble.fresh_pyhlml``)."""
    yield from fresh_pyhlml(monkeypatch)
