"""Run the hpubench CLI in this process, as its console entry point does, with stdout and stderr apart.

``hpubench.present.cli.main.main`` is what ``python -m hpubench`` calls; calling it here with the streams
swapped is the same code path without the ~1 s interpreter start per case, so hundreds of bad inputs stay
fast. Environment and working directory are the caller's to set (monkeypatch), as a shell would.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import traceback
from dataclasses import dataclass
from pathlib import Path

from hpubench.present.cli.main import main


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


def run_in_process(*args: str) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # an escaped exception is what these tests catch: report it as a traceback
            traceback.print_exc(file=err)
            code = -1
    return Outcome(code, out.getvalue(), err.getvalue())


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256), to prove a refused call changed nothing."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def assert_one_line(outcome: Outcome, fragment: str, code: int = 2) -> None:
    """Exit ``code``, exactly one line on stderr that starts with 'error:' and names the problem."""
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert outcome.code == code, (outcome.code, outcome.stderr[-2000:], outcome.stdout[-500:])
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1, outcome.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert fragment.lower() in lines[0].lower(), (fragment, lines[0])
