"""Reading a JSONL transcript that a kill may have cut: every whole line, in order.

A long session's transcript grows to tens of megabytes, and it is read while
a new session waits to start; only its end holds what the session was doing
when it stopped. So at most ``MAX_READ_BYTES`` from the end are read (the
first, partial line of that window is skipped), and a problem line says so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["MAX_READ_BYTES", "read_jsonl"]

MAX_READ_BYTES = 2_000_000


def read_jsonl(
    path: str,
    problems: list[str],
    *,
    keep: Callable[[bytes], bool] | None = None,
    max_bytes: int = MAX_READ_BYTES,
) -> Iterator[dict[str, Any]]:
    """The JSON objects of ``path``, one per line; what is not one goes into ``problems``.

    A line that does not parse is counted, not raised: the last line of a
    session killed mid-write is often cut. A missing or unreadable file is one
    problem and no objects. ``keep`` skips a line before it is parsed (a cheap
    test on the raw bytes, for records a reader never looks at).
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the last yield
    except OSError as exc:
        problems.append(f"cannot read {path}: {exc.strerror or exc}")
        return
    bad = 0
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            handle.seek(size - max_bytes)
            handle.readline()  # the rest of a line that began before the window
            problems.append(
                f"only the last {max_bytes / 1e6:g} MB of {size / 1e6:.1f} MB were read "
                "(the newest part of the session)"
            )
        for raw in handle:
            if not raw.strip() or (keep is not None and not keep(raw)):
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
