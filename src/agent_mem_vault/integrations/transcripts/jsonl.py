"""Reading a JSONL transcript that a kill may have cut: every whole line, in order."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = ["read_jsonl"]


def read_jsonl(path: str, problems: list[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of ``path``, one per line; what is not one goes into ``problems``.

    A line that does not parse is counted, not raised: the last line of a
    session killed mid-write is often cut. A missing or unreadable file is one
    problem and no objects.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the last yield
    except OSError as exc:
        problems.append(f"cannot read {path}: {exc.strerror or exc}")
        return
    bad = 0
    with handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except ValueError:
                bad += 1
                continue
            if isinstance(data, dict):
                yield data
            else:
                bad += 1
    if bad:
        problems.append(f"{bad} line(s) of {path} are not JSON objects (cut by a kill?)")
