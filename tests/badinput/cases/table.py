"""One case of the bad-input table, and the list each kind's module adds its cases to."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    kind: str  # cli, matrix, results, prices, baseline, env
    name: str
    args: tuple[str, ...]
    fragment: str  # the error line must contain this (case-insensitive)
    files: dict[str, str | bytes] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    code: int = 2

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}"


CASES: list[Case] = []


def add(kind: str, name: str, args: tuple[str, ...] | list[str], fragment: str, **kw: object) -> None:
    CASES.append(Case(kind, name, tuple(args), fragment, **kw))  # type: ignore[arg-type]


RUN = ("run", "--out", "o")
