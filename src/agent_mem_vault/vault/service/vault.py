"""The ``Vault``: one method per operation, shared by the CLI, MCP and HTTP.

A vault is a folder of Markdown notes (the truth) with a derived SQLite index
in ``.agent-mem-vault/``. The service is built for many short-lived processes
as well as one long-lived server:

- every write takes the vault lock, re-reads the notes it changes from disk,
  writes them atomically and updates the index, all inside the lock;
- reads use the index after a cheap check of folder mtimes, and verify the one
  note they return against its size and mtime, so a note edited by hand is
  never served stale;
- a full rescan (one ``stat`` per note) runs every ``rescan_interval``
  seconds, on ``rescan()``, and when the index is new; ``reindex()`` rebuilds
  the index from nothing, as happens by itself when it is missing or damaged.

Layout::

    <vault>/
      .agent-mem-vault/index.sqlite3, lock   derived; safe to delete
      _dashboards/memory.base                 Obsidian Bases dashboard
      <namespace>/_brief.md                   the human-editable brief
      <namespace>/handoffs/<id>.md
      <namespace>/memories/<id>.md
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3

from ..folder import repairs
from ..folder.files import CLEANED_WHY, TEMP_FILE
from ..folder.layout import DOT_DIR, is_default_vault, is_vault, read_only_error, vault_not_found
from ..format.dashboard import DASHBOARD_PATH, dashboard_state
from ..format.merge import CONFLICT_NOTE
from ..format.models import DoctorReport, FilledNote, ReindexReport
from ..index.db import Index, is_damage
from ..index.scan import Progress, ScanStats
from ..index.vectors import count_vectors
from ..ops.base import VaultBase
from ..ops.handoffs import HandoffOps, StatusFilter
from ..ops.memories import MemoryOps
from ..ops.memory_life import MemoryLifeOps
from ..ops.outsiders import OutsiderOps
from ..ops.privacy import PrivacyOps
from ..ops.redaction import RedactionOps
from .syncing import SyncOps

__all__ = ["DOT_DIR", "StatusFilter", "Vault"]


class Vault(
    HandoffOps, MemoryOps, MemoryLifeOps, RedactionOps, PrivacyOps, OutsiderOps, SyncOps, VaultBase
):
    """A vault folder of Markdown notes, with a derived SQLite index.

    The handoff operations live in ``handoffs.py``, saving and searching memories
    and the brief in ``memories.py``, listing, updating and forgetting them in
    ``memory_life.py``; this class adds the vault itself (init,
    rescan, reindex, doctor) and is the one public entry point.

    >>> vault = Vault("/tmp/v")  # doctest: +SKIP
    >>> vault.init()  # doctest: +SKIP
    >>> h = vault.create_handoff(to="codex", summary="Batch the backfill",
    ...     context="Start with 1000 rows.", namespace="project/harbor-api",
    ...     from_="claude-code")  # doctest: +SKIP
    >>> vault.read_handoff(agent="codex", namespace="project/harbor-api").text  # doctest: +SKIP
    '## Summary\\nBatch the backfill\\n\\n## Full Context\\nStart with 1000 rows.'

    ``durable=False`` skips fsync (writes survive a killed process, not a
    power cut). ``rescan_interval=None`` turns the periodic full rescan off.
    ``lock_timeout`` bounds how long any call waits for the vault, in all.
    A ``Vault`` may be shared by threads; open one per process.
    """

    def init(self, *, rewrite_dashboard: bool = False) -> ReindexReport:
        """Make the folder a vault (``is_vault``): the folder, its index and dashboard;
        safe to run again. The one way, with the first write to the default vault,
        that a folder becomes a vault.

        The dashboard is written when it is missing or as the vault wrote it; one a
        person changed is left alone (the report says so), unless
        ``rewrite_dashboard``: then theirs is kept beside it (``memory.base.bak``)."""
        self._require_vault(make=True)
        with self._writing(sync=False, dashboard=False) as idx:
            stats = ScanStats()
            self._upkeep.full_scan(idx, stats)
            outcome, backup = self._ensure_dashboard(rewrite=rewrite_dashboard)
            report = self._report(idx, stats)
        return dataclasses.replace(report, dashboard=outcome, dashboard_backup=backup)

    def is_vault(self) -> bool:
        """Whether this folder is a vault yet (see ``is_vault``)."""
        return is_vault(self.path)

    def require(self, *, make_default: bool = False) -> None:
        """Refuse (``vault_not_found``, with the fix) a folder that is not a vault, before
        a command that would write there starts; with ``make_default`` the default
        vault is made instead, on first use (``serve``, a run starting)."""
        if self.is_vault():
            return
        if make_default and is_default_vault(self.path):
            self.init()
            return
        raise vault_not_found(self.path)

    def rescan(self) -> ReindexReport:
        """Pick up every note added, edited or deleted by hand (one stat per note)."""
        return self._rescan()

    def _rescan(self, *, dashboard: bool = True) -> ReindexReport:
        with self._writing(sync=False, dashboard=dashboard) as idx:
            stats = ScanStats()
            self._upkeep.full_scan(idx, stats)
            return self._report(idx, stats)

    def reindex(
        self, progress: Progress | None = None, *, rewrite_dashboard: bool = False
    ) -> ReindexReport:
        """Rebuild the index from the notes alone; also clears temp files a crash left.

        ``progress`` is called as notes are read, with (done, total). The dashboard is
        treated as by ``init``. The new index replaces the old one only once it is
        complete: a reindex that fails (a full disk) leaves the index as it was.
        """
        with self._held():
            self._require_vault()
            self._refuse_if_read_only()
        with self._held(), self._locked():
            self._clean_temp_files()
            idx = self._upkeep.rebuild(progress)
            outcome, backup = self._ensure_dashboard(rewrite=rewrite_dashboard)
            report = self._report(idx, ScanStats(added=idx.count_handoffs() + idx.count_memories()))
            report = dataclasses.replace(report, dashboard=outcome, dashboard_backup=backup)
        # The vectors are rebuilt too, outside the lock: writers go on meanwhile.
        vectors = self.embed_pending()
        return dataclasses.replace(report, vectors=vectors) if vectors else report

    def doctor(self) -> DoctorReport:
        """Rescan, then report broken notes, dangling links and leftovers, and tell what was
        skipped (empty or oversized files) and what the vault repaired by itself lately.

        It changes no note (but repairs, as every scan does, notes whose read box was
        ticked by hand); what is derived it mends and says so: the temp file of a
        killed writer is removed, an index that fails its check is rebuilt. Takes the
        vault lock (``lock_timeout``) to judge temp files, so a write in flight in
        another process is never taken for a leftover."""
        self._require_vault()  # before the rescan, which would make the default vault
        if self._is_read_only():
            with self._held():  # a vault this user cannot write: its index is in memory
                self._upkeep.full_scan(self._upkeep.handle(), ScanStats())
        else:
            self._rescan(dashboard=False)  # a missing dashboard is reported, not written
        # Under the lock: a temp file seen then is a killed write's, never one in flight.
        with self._held(), self._locked():
            if not self._is_read_only():  # nothing to remove where nothing can be written
                self._clean_temp_files()
            idx = self._checked_index()
            temps, kept = self._walk()
            problems = [
                *self._link_problems(idx),
                *self._leftover_problems(temps),
                *self._merge_problems(idx, kept),
            ]
            filled = tuple(FilledNote(path, names) for path, names in idx.filled_notes())
            report = DoctorReport(
                path=str(self.path),
                handoffs=idx.count_handoffs(),
                memories=idx.count_memories(),
                pending=idx.count_handoffs("pending"),
                broken=tuple(idx.broken()),
                problems=tuple(problems),
                search=self._search_status(idx),
                filled=filled,
                information=tuple(self._information()),
                skipped=tuple(idx.skipped()),
                repairs=tuple(repairs.recent(self.path, self.clock.now())),
            )
        # Outside the lock: it asks git (and only in a vault that syncs).
        statuses = self.sync_status()
        if not statuses:
            return report
        held = tuple(line for status in statuses for line in status.problems())
        return dataclasses.replace(
            report,
            sync=tuple(r.to_dict() for r in statuses),
            problems=(*report.problems, *held, *self._quarantine_problems()),
        )

    def _quarantine_problems(self) -> list[str]:
        """Each handoff and memory written outside the team that waits for a person
        (``require``)."""
        from ..format.origin import UNVERIFIED

        out = []
        for h in self.quarantined_handoffs():
            origin = h.origin
            who = "someone unknown" if origin is None else origin.who
            why = "" if origin is None else f": {UNVERIFIED.get(origin.why or '', origin.why)}"
            if h.status == "read":
                out.append(
                    f"closed outside the team in {h.namespace}: handoff {h.id} to "
                    f"{h.recipient or 'any agent'} was marked read by {who}, whom no listed "
                    f"key signs for; if its work is not done: agent-mem-vault reopen {h.id}"
                )
                continue
            out.append(
                f"quarantined in {h.namespace}: handoff {h.id} to {h.recipient or 'any agent'}, "
                f"written by {who}{why}; read it (agent-mem-vault show {h.id}), then "
                f"agent-mem-vault trust release {h.id}, or agent-mem-vault trust delete {h.id}"
            )
        for m in self.quarantined_memories():
            origin = m.origin
            who = "someone unknown" if origin is None else origin.who
            why = "" if origin is None else f": {UNVERIFIED.get(origin.why or '', origin.why)}"
            out.append(
                f"quarantined in {m.namespace}: {m.kind} {m.id} ({m.title}), written by "
                f"{who}{why}; read it (agent-mem-vault show {m.id}), then agent-mem-vault "
                f"trust release {m.id}, or agent-mem-vault trust delete {m.id}"
            )
        return out

    def _merge_problems(self, idx: Index, kept: list[str]) -> list[str]:
        """What merges left for a person: a side that lost (``kept``: its conflict notes)
        and a handoff delivered on two machines."""
        problems = [
            f"{path} keeps a version of {_conflict_of(path)} that lost a merge; merge what it "
            "holds into that note by hand, then delete it"
            for path in kept
        ]
        for path, what in idx.delivered_twice():
            problems.append(
                f"handoff {path} was {what}: make sure its work was not done twice, then "
                "delete its also_read property"
            )
        return problems

    def _information(self) -> list[str]:
        """What doctor says that is not a problem: a dashboard a person changed (left
        alone), a vault this user can only read."""
        out: list[str] = []
        try:
            current = (self.path / DASHBOARD_PATH).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current is not None and dashboard_state(current) == "changed":
            out.append(
                f"{DASHBOARD_PATH} was changed by hand, so init and reindex leave it as it is; "
                "'agent-mem-vault init --rewrite-dashboard' puts the vault's back (yours is "
                "kept beside it)"
            )
        if self._is_read_only():
            out.append(f"{read_only_error(self.path).message.partition(';')[0]}: reads work")
        return out

    def _checked_index(self) -> Index:
        """The index, rebuilt from the notes (and the rebuild recorded) if SQLite's own
        check of it fails: it is derived, so mending it is safe (the lock is held)."""
        idx = self._upkeep.handle()
        try:
            check = idx.conn.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            check = str(exc)
        if check == "ok":
            return idx
        return self._upkeep.rebuild(why=f"its check failed ({' '.join(check.split())})")

    def _search_status(self, idx: Index) -> dict[str, object]:
        """Which search mode answers, with which model from where (the model is not loaded)."""
        status: dict[str, object] = dict(self.embeddings.describe())
        vectors, waiting = count_vectors(idx.conn)
        status["vectors"] = vectors
        status["waiting_for_vector"] = waiting
        return status

    def _link_problems(self, idx: Index) -> list[str]:
        """``supersedes`` links whose other end is missing or does not point back."""
        problems: list[str] = []
        for newer_id, raw in idx.handoffs_with_supersedes():
            for older_id in json.loads(raw):
                older = idx.handoff(older_id)
                if older is None:
                    problems.append(f"handoff {newer_id} supersedes {older_id}, which is missing")
                elif older.superseded_by is None and older.status == "pending":
                    # A writer killed between its two renames: two live threads.
                    problems.append(
                        f"handoff {newer_id} supersedes {older_id}, but {older_id} is still "
                        f"pending (a write was interrupted); 'agent-mem-vault ack {older_id}' "
                        "closes it"
                    )
                elif older.superseded_by not in (None, newer_id) and not _superseded_by(
                    idx, newer_id, older.superseded_by
                ):
                    problems.append(
                        f"handoff {newer_id} supersedes {older_id}, but {older_id} names "
                        f"{older.superseded_by} as its replacement; fix one of the two notes"
                    )
        return problems

    def _leftover_problems(self, temps: list[str]) -> list[str]:
        """A missing dashboard; temp files of killed writes (``temps``) still there where
        they cannot be removed (a vault this user cannot write: elsewhere
        ``_clean_temp_files`` removed them)."""
        problems: list[str] = []
        if not (self.path / DASHBOARD_PATH).is_file():
            problems.append(f"{DASHBOARD_PATH} is missing; run 'agent-mem-vault init'")
        problems += [
            f"{temp} is a temp file left by an interrupted write; the next write where "
            "the vault can be written removes it"
            for temp in temps
        ]
        return problems

    def _clean_temp_files(self) -> None:
        """Remove the temp files killed writers left that the lock's journal did not name
        (a power cut, or a writer of an older version), and record each (the lock is
        held, so none is a write in flight)."""
        for rel in self._temp_files():
            try:
                (self.path / rel).unlink()
            except FileNotFoundError:
                continue
            repairs.record(self.path, self.clock, "cleaned", rel, CLEANED_WHY)

    def _temp_files(self) -> list[str]:
        """Temp files ``atomic_write`` left behind; only ours, never in dot-folders."""
        return self._walk()[0]

    def _walk(self) -> tuple[list[str], list[str]]:
        """(temp files of killed writes, conflict notes kept by merges), one walk."""
        temps: list[str] = []
        kept: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.path):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if TEMP_FILE.fullmatch(name):
                    temps.append(os.path.relpath(os.path.join(dirpath, name), self.path))
                elif CONFLICT_NOTE.fullmatch(name):
                    kept.append(os.path.relpath(os.path.join(dirpath, name), self.path))
        return sorted(temps), sorted(kept)

    def _report(self, idx: Index, stats: ScanStats) -> ReindexReport:
        return ReindexReport(
            handoffs=idx.count_handoffs(),
            memories=idx.count_memories(),
            added=stats.added,
            changed=stats.changed,
            removed=stats.removed,
            broken=tuple(idx.broken()),
        )


def _conflict_of(path: str) -> str:
    """The note a conflict note kept a version of (``merge.conflict_note``'s names)."""
    folder, _, name = path.rpartition("/")
    found = CONFLICT_NOTE.fullmatch(name)
    original = f"{found.group('stem')}.md" if found else name
    return f"{folder}/{original}" if folder else original


def _superseded_by(idx: Index, id: str, newer: str | None) -> bool:
    """Whether handoff ``id`` was itself superseded by ``newer``: two handoffs that
    superseded one older handoff on two machines at once, merged into one thread
    (``merge.py``): the older names the newest, and the other names it too."""
    found = idx.handoff(id)
    return found is not None and newer is not None and found.superseded_by == newer
