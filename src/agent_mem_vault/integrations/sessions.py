"""Coding-agent sessions as runs, and the automatic handoff a dead session leaves.

Every session the session-start hook sees is a run (``agent_mem_vault.runs``)
of one runs agent per namespace, ``sessions~<namespace with / as ~>``: the
sessions of every coding agent working in one repository form one run log.
The run records the session's process (pid and start time), so a session
whose process is gone is known dead at once; a clean end reported by the
client's session-end hook stops the run. Starting a run takes the namespace
over, and the runs face writes its ``garden.engram.agents.handoff`` record
for a predecessor that is no longer alive, keyed by the new run, at most once.

At each session start, the earlier sessions of the namespace that are no
longer alive and are not settled yet are looked at once: if a transcript
shows work after its last explicit ``create_handoff``, an automatic handoff
from it to the new session's agent is written; either way it is settled. A
session still alive in another terminal is left alone. The decision for each
dead session is claimed with put-if-absent (``sessions.auto``, keyed by the
dead session's run), so however many sessions start at once, and however
often a hook runs, one handoff is written.

A start must end within the client's hook time limit (``hooks_json.
TIMEOUT_SECONDS``, 10 s), or the client kills the hook and the session is
never registered, so can never be handed off. So a start registers its
session first and settles after, each step bounded:

* registration is serialised by a lock file next to the runs store (a hook
  run twice registers one run); it is held only for the few writes of one
  registration, and waited for at most ``REGISTER_WAIT_SECONDS``. A start
  that does not get it in time registers without it: a session registered
  twice is better than one never registered (the older registration is then
  settled as ``resumed``, never handed off twice).
* settling takes a second lock without waiting: while one start settles,
  another starts at once and leaves the dead sessions to it. A start settles
  at most ``MAX_SETTLED_PER_START`` dead sessions and starts no new one after
  ``SETTLE_SECONDS``; the rest are settled at the next start.

Documents, all in the runs store (``<vault>/.runs/runs.sqlite3``):

* ``sessions.sessions`` ``<slot>/<run>``: client, agent, session id, transcript, cwd;
* ``sessions.by_id`` ``<slot>/<client>/<session id>``: the session's current run;
* ``sessions.open`` ``<slot>/<run>``: sessions not settled yet;
* ``sessions.auto`` ``<slot>/<dead run>``: what became of a dead session;
* ``sessions.received`` ``<slot>/<new run>/<dead run>``: the handoffs a start wrote.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..core.clock import SYSTEM_CLOCK, format_datetime
from ..core.errors import InvalidInputError, UnavailableError
from ..core.wire import CamelJson
from ..vault.folder.files import VaultLock
from .auto_handoff import Stopped, build_auto_handoff, max_bytes_from_env, work_after_last_handoff
from .transcripts import CLIENTS, find_transcript, read_transcript

if TYPE_CHECKING:
    from ..runs import RunRegistry
    from ..runs.models import RunInfo
    from ..store.base import Persistence
    from ..vault import Vault
    from ..vault.format.models import Handoff

__all__ = [
    "OFF_ENV",
    "SESSION_LEASE_SECONDS",
    "SessionBook",
    "SessionStart",
    "SessionState",
    "StartOutcome",
    "auto_handoff_enabled",
    "slot_agent",
]

OFF_ENV = "AGENT_MEM_VAULT_AUTO_HANDOFF"
SESSION_LEASE_SECONDS = 24 * 3600.0
"""A session never heartbeats: its process tells whether it is alive. Where the
process cannot be identified (no ``/proc``), it counts as alive for this long
after its start unless the client reports its end."""
SESSIONS, BY_ID, OPEN, AUTO, RECEIVED = (
    "sessions.sessions",
    "sessions.by_id",
    "sessions.open",
    "sessions.auto",
    "sessions.received",
)
LOCK_FILE = "sessions.lock"
SETTLE_LOCK_FILE = "sessions.settle.lock"
REGISTER_WAIT_SECONDS = 2.0
"""How long a start waits for the registration lock: a fifth of the hook's time limit."""
MAX_SETTLED_PER_START = 8
"""Dead sessions one start settles (reads the transcript of, hands off); the rest wait for
the next start. Each costs a transcript read of up to 1 MB and, when handed off, a note."""
SETTLE_SECONDS = 4.0
"""After this long since its start began, a start settles no further dead session."""
GIT_STATUS_TIMEOUT = 2.0
MAX_GIT_LINES = 60
Liveness = Literal["alive", "ended", "dead"]
_T = TypeVar("_T")


def auto_handoff_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """False when ``AGENT_MEM_VAULT_AUTO_HANDOFF`` is 0, off, false or no."""
    value = (environ if environ is not None else os.environ).get(OFF_ENV, "")
    return value.strip().lower() not in ("0", "off", "false", "no")


def slot_agent(namespace: str) -> str:
    """The runs agent whose runs are ``namespace``'s sessions (``~`` is in no namespace)."""
    return "sessions~" + namespace.replace("/", "~")


@dataclass(frozen=True)
class SessionStart:
    """What a session-start hook knows about the session that starts."""

    client: str
    """``claude-code``, ``codex``, ``gemini-cli`` or ``opencode``."""
    agent: str
    namespace: str
    session_id: str
    cwd: str
    transcript: str | None = None
    """Where the client writes the transcript (hook input or the client's layout)."""
    transcript_search: str | None = None
    """Where to search for the transcript once it is needed, when ``transcript`` is None
    (``transcripts.locate_at_start``: Codex's and Gemini CLI's session folders)."""
    source: str | None = None
    pid: int | None = None
    """The session's process (see ``session_process.py``); None: not identified, and
    the run's lease (``SESSION_LEASE_SECONDS``) alone says whether it is alive."""


@dataclass(frozen=True)
class StartOutcome:
    run: str
    """The session's run TID."""
    received: tuple[Handoff, ...] = ()
    """Automatic handoffs written for this session (at this start or an earlier hook run)."""


@dataclass(frozen=True)
class SessionState(CamelJson):
    """One session of a namespace as ``agent-mem-vault sessions`` shows it."""

    run: str
    client: str
    agent: str
    session_id: str
    started_at: str
    state: Liveness
    transcript: str | None
    outcome: str | None
    """``handed_off``, ``nothing`` (no work after its last handoff), ``resumed``, ``failed``
    (writing the handoff failed: ``error`` says why), or None (not settled yet)."""
    handoff: str | None = None
    """The automatic handoff's id, when one was written."""
    to_run: str | None = None
    error: str | None = None


class SessionBook:
    """The sessions of a vault's namespaces, kept in the runs store next to the vault.

    >>> book = SessionBook(vault)  # doctest: +SKIP
    >>> start = SessionStart("codex", "codex", "project/app", "0199…", "/src/app")  # doctest: +SKIP
    >>> book.start(start).received  # automatic handoffs written for it  # doctest: +SKIP
    ()
    """

    def __init__(self, vault: Vault, store: str | Path | None = None) -> None:
        from ..runs.service import default_store_path

        self.vault = vault
        where = Path(store).expanduser().absolute() if store else None
        self.store = where or default_store_path(vault.path)

    # -- the operations ------------------------------------------------------
    def start(self, start: SessionStart) -> StartOutcome:
        """Register the session as a run, and hand off for the dead sessions before it.

        Bounded in time (see the module's docstring): registering waits at most
        ``REGISTER_WAIT_SECONDS`` for its lock, and settling is skipped while
        another start settles and stops after ``MAX_SETTLED_PER_START`` dead
        sessions or ``SETTLE_SECONDS``.
        """
        if start.client not in CLIENTS:
            raise InvalidInputError(
                f"unknown client {start.client!r}: use one of {', '.join(CLIENTS)}",
                field="client",
            )
        began = time.monotonic()
        self.store.parent.mkdir(parents=True, exist_ok=True)
        return asyncio.run(self._with_registry(self._start, start, began + SETTLE_SECONDS))

    def end(self, client: str, namespace: str, session_id: str) -> str | None:
        """Mark the session's run stopped (a clean end); its run TID, or None if unknown."""
        if not self.store.exists():
            return None
        return asyncio.run(self._with_registry(self._end, client, namespace, session_id))

    def sessions(self, namespace: str) -> list[SessionState]:
        """The namespace's sessions, oldest first."""
        if not self.store.exists():
            return []
        return asyncio.run(self._with_registry(self._list, namespace))

    # -- inside one open store -----------------------------------------------
    async def _with_registry(self, fn: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        from ..runs import RunRegistry
        from ..runs.notes import HandoffNotes
        from ..store import sqlite_persistence

        notes = HandoffNotes(self.vault.path)
        registry = RunRegistry(sqlite_persistence(self.store), on_handoff=notes.write)
        try:
            return await fn(registry, *args)
        finally:
            await registry.store.close()

    async def _start(
        self, registry: RunRegistry, start: SessionStart, deadline: float
    ) -> StartOutcome:
        slot = slot_agent(start.namespace)
        lock = _try_lock(self.store.parent / LOCK_FILE, REGISTER_WAIT_SECONDS)
        try:
            run = await self._register(registry, slot, start)
        finally:
            if lock is not None:
                lock.release()
        settle = _try_lock(self.store.parent / SETTLE_LOCK_FILE, 0.0)
        if settle is not None:  # else another start settles: leave the dead sessions to it
            try:
                await self._settle(registry, slot, start, run, deadline)
            finally:
                settle.release()
        return StartOutcome(run, await self._received(registry, slot, run))

    async def _register(self, registry: RunRegistry, slot: str, start: SessionStart) -> str:
        """The session's run: the one its hook registered before if that one lives, else new."""
        store = registry.store
        by_id = f"{slot}/{start.client}/{start.session_id}"
        known = await store.get(BY_ID, by_id)
        if known is not None:
            info = await self._info(registry, slot, str(known.value["run"]))
            if info is not None and await registry.is_alive(info):
                return info.run  # the hook ran again for the same live session
        new = await registry.start_run(
            slot,
            lease_seconds=SESSION_LEASE_SECONDS,
            # Without the session's pid, no process is recorded: the hook's own
            # process exits at once, and the session would look dead.
            pid="unknown" if start.pid is None else start.pid,
        )
        run = new.tid
        await store.put(SESSIONS, f"{slot}/{run}", _session_doc(start, run))
        await store.put(BY_ID, by_id, {"run": run})
        await store.put(OPEN, f"{slot}/{run}", {"run": run})
        return run

    async def _settle(
        self, registry: RunRegistry, slot: str, start: SessionStart, run: str, deadline: float
    ) -> None:
        """Hand off for the open sessions of the slot that are no longer alive, oldest first,
        at most ``MAX_SETTLED_PER_START`` of them and none begun after ``deadline``."""
        store = registry.store
        # The new session's git status, the same for every handoff this settle
        # writes: run once, and only when one is written.
        git_status: list[str] | None = None
        settled = 0
        for doc in await store.scan(OPEN, prefix=f"{slot}/"):
            dead_run = str(doc.value["run"])
            if dead_run == run:
                continue
            info = await self._info(registry, slot, dead_run)
            session = await store.get(SESSIONS, f"{slot}/{dead_run}")
            if info is None or session is None:
                await store.delete(OPEN, doc.key)
                continue
            if await registry.is_alive(info):
                continue
            if settled >= MAX_SETTLED_PER_START or time.monotonic() > deadline:
                break  # the next start settles the rest
            settled += 1
            outcome = await self._decide(store, slot, session.key, session.value, start)
            claim, created = await store.insert(
                AUTO, f"{slot}/{dead_run}", {"outcome": outcome[0], "toRun": run}
            )
            if created and outcome[1] is not None:
                stopped = await registry.is_stopped(info)
                try:
                    if git_status is None:
                        git_status = _git_status(start.cwd)
                    handoff = self._write_handoff(
                        session.value, start, info, run, stopped, outcome[1], git_status
                    )
                except Exception as exc:
                    # Claimed, so never tried again (at most once): say why it is missing,
                    # and let the new session start.
                    failed = {"outcome": "failed", "toRun": run, "error": _describe(exc)}
                    await store.put(AUTO, claim.key, failed)
                else:
                    await store.put(AUTO, claim.key, {**claim.value, "handoff": handoff.id})
                    await store.put(
                        RECEIVED,
                        f"{slot}/{run}/{dead_run}",
                        {"handoff": handoff.id, "from": dead_run},
                    )
            # Its runs record, if it was taken over while alive and has died since
            # (a run taken over when already dead got its record at that takeover).
            await registry.reap_run(info)
            await store.delete(OPEN, doc.key)

    async def _decide(
        self,
        store: Persistence,
        slot: str,
        key: str,
        session: Mapping[str, Any],
        start: SessionStart,
    ) -> tuple[str, Any]:
        """(outcome, the transcript to hand off or None) for a session that is not alive."""
        client, session_id = str(session.get("client")), session.get("sessionId")
        if client == start.client and session_id == start.session_id:
            return "resumed", None  # the same session goes on in a new process
        latest = await store.get(BY_ID, f"{slot}/{client}/{session_id}")
        if latest is not None and latest.value.get("run") != session.get("run"):
            # The same session was registered again since (it was resumed, or its
            # hook registered it twice): its work goes on, or is handed off, there.
            return "resumed", None
        locator = session.get("transcript")
        if not locator:
            # Searched for only now that it is needed, and kept for ``sessions``.
            locator = find_transcript(client, session.get("transcriptSearch"), session_id)
            if locator:
                await store.put(SESSIONS, key, {**session, "transcript": locator})
        transcript = read_transcript(client, locator, session_id)
        if not work_after_last_handoff(transcript):
            return "nothing", None
        return "handed_off", transcript

    def _write_handoff(
        self,
        session: Mapping[str, Any],
        start: SessionStart,
        info: RunInfo,
        run: str,
        stopped: bool,
        transcript: Any,
        git_status: list[str],
    ) -> Handoff:
        who = Stopped(
            client=str(session.get("client")),
            session_id=str(session.get("sessionId")),
            agent=str(session.get("agent")),
            how="ended" if stopped else "died",
            started_at=info.started_at,
            cwd=str(session.get("cwd")),
        )
        from .namespace import find_repo_root

        root = find_repo_root(Path(who.cwd)) if who.cwd else None
        text = build_auto_handoff(
            transcript,
            who,
            git_status=git_status,
            max_bytes=max_bytes_from_env(),
            root=str(root) if root else None,
        )
        return self.vault.create_handoff(
            to=start.agent,
            summary=text.summary,
            context=text.context,
            namespace=start.namespace,
            from_=who.agent,
            properties={
                "origin": "auto",
                "source_session": who.session_id,
                "client": who.client,
                "transcript": transcript.source,
                "from_run": info.run,
                "to_run": run,
            },
        )

    async def _received(self, registry: RunRegistry, slot: str, run: str) -> tuple[Handoff, ...]:
        out = []
        for doc in await registry.store.scan(RECEIVED, prefix=f"{slot}/{run}/"):
            try:
                out.append(self.vault.get_handoff(str(doc.value["handoff"])))
            except Exception:  # a note removed by hand: nothing to show
                continue
        return tuple(out)

    async def _end(
        self, registry: RunRegistry, client: str, namespace: str, session_id: str
    ) -> str | None:
        slot = slot_agent(namespace)
        known = await registry.store.get(BY_ID, f"{slot}/{client}/{session_id}")
        if known is None:
            return None
        info = await registry.stop_run(slot, str(known.value["run"]))
        return info.run

    async def _list(self, registry: RunRegistry, namespace: str) -> list[SessionState]:
        slot = slot_agent(namespace)
        store = registry.store
        if await store.get("runs.agents", slot) is None:
            return []
        out = []
        for state in await registry.list_runs(slot):
            info = state.info
            session = await store.get(SESSIONS, f"{slot}/{info.run}")
            if session is None:
                continue
            value = session.value
            auto = await store.get(AUTO, f"{slot}/{info.run}")
            liveness: Liveness = (
                "alive" if state.alive else "ended" if await registry.is_stopped(info) else "dead"
            )
            out.append(
                SessionState(
                    run=info.run,
                    client=str(value.get("client")),
                    agent=str(value.get("agent")),
                    session_id=str(value.get("sessionId")),
                    started_at=info.started_at,
                    state=liveness,
                    transcript=value.get("transcript")
                    or find_transcript(
                        str(value.get("client")),
                        value.get("transcriptSearch"),
                        value.get("sessionId"),
                    ),
                    outcome=None if auto is None else str(auto.value.get("outcome")),
                    handoff=None if auto is None else auto.value.get("handoff"),
                    to_run=None if auto is None else auto.value.get("toRun"),
                    error=None if auto is None else auto.value.get("error"),
                )
            )
        return out

    @staticmethod
    async def _info(registry: RunRegistry, slot: str, run: str) -> RunInfo | None:
        from ..core.errors import NotFoundError

        try:
            return (await registry.attach(slot, run)).info
        except NotFoundError:
            return None


def _try_lock(path: Path, wait: float) -> VaultLock | None:
    """The lock at ``path``, held, if it comes within ``wait`` seconds; else None."""
    lock = VaultLock(path, timeout=wait)
    try:
        lock.acquire()
    except UnavailableError:
        return None
    return lock


def _describe(exc: Exception) -> str:
    code = getattr(exc, "code", None)
    return f"{exc} [{code}]" if code else f"{type(exc).__name__}: {exc}"


def _session_doc(start: SessionStart, run: str) -> dict[str, Any]:
    return {
        "run": run,
        "client": start.client,
        "agent": start.agent,
        "namespace": start.namespace,
        "sessionId": start.session_id,
        "transcript": start.transcript,
        "transcriptSearch": start.transcript_search,
        "cwd": start.cwd,
        "source": start.source,
        "registeredAt": format_datetime(SYSTEM_CLOCK.now()),
    }


def _without_install_files(lines: list[str], cwd: str) -> list[str]:
    """``git status --short`` lines less the files ``install`` wrote in the repository.

    They are not the session's work: a handoff that lists ``.mcp.json`` as changed
    sends the next agent looking at our set-up. An untracked folder (``?? .claude/``)
    goes when everything in it is ours.
    """
    from .targets import install_files

    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=GIT_STATUS_TIMEOUT,
        check=False,
    )
    if top.returncode != 0 or not top.stdout.strip():
        return lines
    root = Path(top.stdout.strip())
    ours = install_files(root)
    kept = []
    for line in lines:
        # `XY path` (`XY old -> new` for a rename: the new path is what is there now).
        name = line[3:].split(" -> ")[-1].strip().strip('"')
        target = root / name
        if name.endswith("/") and target.is_dir():
            inside = [p for p in target.rglob("*") if p.is_file()]
            if inside and all(p in ours for p in inside):
                continue
        elif target in ours:
            continue
        kept.append(line)
    return kept


def _git_status(cwd: str) -> list[str]:
    """``git status --short`` of the new session's repository; [] where git cannot say."""
    try:
        proc = subprocess.run(
            ["git", "status", "--short", "--untracked-files=normal"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_STATUS_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    lines = _without_install_files(lines, cwd)
    if len(lines) > MAX_GIT_LINES:
        lines = [*lines[:MAX_GIT_LINES], f"… and {len(lines) - MAX_GIT_LINES} more"]
    return lines
