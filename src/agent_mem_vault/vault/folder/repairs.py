"""What the vault repaired by itself, kept for ``doctor`` to tell.

The vault mends two things without asking anyone: an index it finds damaged
is rebuilt from the notes, and the temp file a killed writer left is removed
by the next process that takes the vault lock (``files.VaultLock``). Done
quietly, both hid what happened from the person who has to judge whether
their disk is failing; each is recorded here, one JSON line in
``.agent-mem-vault/repairs.jsonl``, and ``doctor`` shows those of the last
``SHOWN_FOR``.

Recording is best effort: on a full disk the line is lost, never the repair
(or the caller's write) with it. The file is kept short (``KEEP`` lines).
"""

from __future__ import annotations

import json
import os
from contextlib import suppress
from datetime import datetime, timedelta
from pathlib import Path

from ...core.clock import Clock, format_datetime
from ..format.models import Repair

__all__ = ["KEEP", "REPAIRS_FILE", "SHOWN_FOR", "recent", "record"]

REPAIRS_FILE = ".agent-mem-vault/repairs.jsonl"
"""The record, relative to the vault folder (with the index: derived, local)."""
SHOWN_FOR = timedelta(days=7)
"""How far back ``doctor`` tells what was repaired."""
KEEP = 200
"""Lines kept: beyond twice as many, the oldest are dropped."""


def record(root: Path, clock: Clock, what: str, path: str, why: str) -> None:
    """Note that the vault at ``root`` repaired ``path`` (``what``: ``rebuilt`` or
    ``cleaned``) because ``why``; never raises."""
    line = json.dumps(
        {"at": format_datetime(clock.now()), "what": what, "path": path, "why": why},
        ensure_ascii=False,
    )
    target = root / REPAIRS_FILE
    with suppress(OSError):
        with open(target, "a", encoding="utf-8") as out:
            out.write(line + "\n")
            size = out.tell()
        if size > KEEP * 2 * 160:  # about twice KEEP lines: keep the newest KEEP
            lines = target.read_text(encoding="utf-8").splitlines()
            if len(lines) > 2 * KEEP:
                tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
                tmp.write_text("\n".join(lines[-KEEP:]) + "\n", encoding="utf-8")
                os.replace(tmp, target)


def recent(root: Path, now: datetime, within: timedelta = SHOWN_FOR) -> list[Repair]:
    """The repairs recorded at ``root`` since ``now - within``, oldest first."""
    try:
        lines = (root / REPAIRS_FILE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    since = now - within
    out: list[Repair] = []
    for line in lines:
        try:
            data = json.loads(line)
            repair = Repair(
                at=str(data["at"]),
                what=str(data["what"]),
                path=str(data["path"]),
                why=str(data["why"]),
            )
            if datetime.fromisoformat(repair.at.replace("Z", "+00:00")) >= since:
                out.append(repair)
        except (ValueError, KeyError, TypeError):
            continue  # a line cut by a full disk or a crash: the rest still counts
    return out
