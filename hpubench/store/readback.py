"""Reading result files back: parse a ``cells.jsonl``, check every record, keep the latest of each run.

Separate from the writer (:mod:`hpubench.store.rundir`) because most callers only read (``results``,
``report``, ``gate``, baselines): a line without its newline can only be a torn write and is dropped;
anything else that does not parse is somebody's edit or another hpubench version, and that is reported
with the file and line rather than guessed around.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from hpubench.errors import UsageError
from hpubench.store.layout import CELLS_FILE
from hpubench.store.record import READABLE_SCHEMAS, CellResult
from hpubench.store.recordcheck import RecordError


def parse_records(path: Path) -> list[CellResult]:
    """Every complete record of a cells.jsonl file, in file order (duplicates kept)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"results file {path} does not exist") from None
    except OSError as e:
        raise UsageError(f"cannot read results file {path}: {e.strerror or e}") from None
    lines = data.split(b"\n")
    # The last element is what follows the final newline: empty for a clean file, else a torn write.
    lines.pop()
    out: list[CellResult] = []
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            d = json.loads(raw)
        except (ValueError, RecursionError) as e:  # RecursionError: nested deeper than any record
            raise UsageError(
                f"{path}:{lineno}: corrupt result record ({e}); fix: delete that line "
                "(the cell is then re-run with --resume) or write results to a new run directory"
            ) from None
        if not isinstance(d, dict):
            raise UsageError(
                f"{path}:{lineno}: corrupt result record (not a JSON object); fix: delete that line "
                "or write results to a new run directory"
            )
        schema = d.get("schema")
        if schema not in READABLE_SCHEMAS:
            readable = " and ".join(map(str, READABLE_SCHEMAS))
            raise UsageError(
                f"{path}:{lineno}: result record has schema version {schema!r} but this hpubench reads "
                f"versions {readable}; fix: read it with the hpubench version that wrote it, "
                "or re-run into a new run directory"
            )
        try:
            out.append(CellResult.from_dict(d))
        except RecordError as e:
            raise UsageError(
                f"{path}:{lineno}: invalid result record: {e}; fix: correct or delete that line "
                "(the cell is then re-run with --resume) or write results to a new run directory"
            ) from None
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(
                f"{path}:{lineno}: invalid result record ({type(e).__name__}: {e}); fix: delete that line "
                "or write results to a new run directory"
            ) from None
    return out


def latest_per_key(results: Iterable[CellResult]) -> list[CellResult]:
    """A re-run replaces: the last record of a (key, repeat) wins, kept at its first position (run order).

    Repetitions (``hpubench run --repeat N``) are distinct records of one key, so they are all kept.
    """
    latest: dict[tuple[str, int], CellResult] = {}
    for r in results:
        latest[r.run_id] = r
    return list(latest.values())


def load_results(paths: list[str]) -> list[CellResult]:
    """Records from several runs (directories or cells.jsonl files), each run deduplicated, in order.

    Records of the same key from different runs are all kept: comparing runs is the point of reading
    several. Within a run, every repetition of a key is kept (``CellResult.repeat`` tells them apart).
    """
    out: list[CellResult] = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise UsageError(
                f"results path {p} does not exist; fix: give a run directory or a {CELLS_FILE} file"
            )
        if path.is_dir():
            if not (path / CELLS_FILE).exists():
                raise UsageError(
                    f"no {CELLS_FILE} in {p}; fix: point at a run directory written by 'hpubench run'"
                )
            path = path / CELLS_FILE
        elif path.name != CELLS_FILE and (path.parent / CELLS_FILE).exists():
            # another file of a run directory (meta.json, estimates.json: a shell glob such as DIR/*)
            raise UsageError(
                f"{p} is not a results file; fix: give its run directory {path.parent} or its {CELLS_FILE}"
            )
        if not os.access(path, os.R_OK):
            raise UsageError(f"cannot read results file {path} (permission denied)")
        out.extend(latest_per_key(parse_records(path)))
    return out
