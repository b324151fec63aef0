"""The harness host: threads on a persistence, access on every call, events.

>>> from agent_mem_vault.harness import HarnessHost, memory_persistence
>>> host = HarnessHost(persistence=memory_persistence())

A host keeps, per thread, the state folded from its log and an asyncio lock
so that one process runs one operation on a thread at a time; across
processes and hosts, the log's lease and ``expected_seq`` do that job
(:mod:`.threadlog`).

Many hosts on one database (``postgres_persistence(dsn)``):

* **One writer per thread.** The host that writes a thread's log owns it
  for ``lease_ttl`` after its last write, renewing while a turn runs. Any
  host may *read* any thread (snapshots, ``session.events()``, which see
  other hosts' appends live).
* **A send to a host that does not own the thread raises**
  ``LogOwnedElsewhereError`` (code ``log_owned_elsewhere``, HTTP 409, with
  ``owner`` and ``expires_at`` in its details) and writes nothing; it is not
  forwarded. Hosts know no addresses of each other, and forwarding through
  the database would write the user's provider keys there and add a second
  queue that must itself be exactly-once. Route requests by thread id
  (affinity) in front of the hosts; on ``log_owned_elsewhere`` send to the
  owner, or retry with the same ``input_id`` once the lease lapses — an
  input id runs at most once, whichever host takes it. What writes nothing
  needs no lease, on any host: a read, a rejected call, the retry of an
  input that already finished.
* **Failover.** When the owner dies its lease lapses after at most
  ``lease_ttl``; the next host that writes the thread takes it over and
  first closes a turn the log shows in flight, exactly as the log says
  (:mod:`.takeover`): never runs it again. ``host.close()`` gives the
  leases up at once, for a restart without the wait.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from weakref import WeakValueDictionary

from ..core.clock import SYSTEM_CLOCK, Clock, format_datetime
from ..core.errors import InvalidInputError, UserError
from ..core.ids import TidGenerator
from ..store import LogConflictError, Persistence, memory_persistence
from .access import DEFAULT_TENANT, Access, Action, User, as_user, authorize, require_user
from .definitions import Harness
from .errors import ThreadNotFoundError, WrongHarnessError
from .events import HOST_STREAM, HostEvent
from .index import ThreadEntry, create_entry, get_entry, list_entries, update_entry
from .log import check_id, stream_name
from .session import Session
from .spans import takeover_span
from .state import ThreadState
from .takeover import close_interrupted_turn
from .threadlog import ThreadLog

if TYPE_CHECKING:
    from .transfer import Endpoint, Envelope, TransferResult

__all__ = ["HarnessHost", "Sessions", "ThreadSummary"]

ROLES_HINT = "member or operator"
_TAKEOVER_ATTEMPTS = 5


class ThreadSummary:
    """A thread as a list shows it: id, harness, owner, whether a person is awaited."""

    __slots__ = ("entry", "waiting_for_human")

    def __init__(self, entry: ThreadEntry, waiting_for_human: bool) -> None:
        self.entry = entry
        self.waiting_for_human = waiting_for_human

    @property
    def thread_id(self) -> str:
        return self.entry.thread_id

    @property
    def harness(self) -> str:
        return self.entry.harness

    def to_json(self) -> dict[str, Any]:
        body = self.entry.to_json()
        body["waitingForHuman"] = self.waiting_for_human
        return body


class HarnessHost:
    """Runs harnesses' threads on one persistence.

    ``access``: ``Access(get_user=..., rules=members_only())`` to check every
    call, or None to let everyone do everything (one tenant per user's
    ``tenant_id``, ``"default"`` without a user). ``lease_ttl`` is how long
    this host owns a thread's log after its last write; ``summary_timeout``
    bounds the model call of a ``summary`` transfer. ``max_cached_threads``
    bounds how many threads' state this host keeps in memory: the log is the
    truth, so an idle thread beyond it is forgotten and read back from its log
    when it is next used.
    """

    def __init__(
        self,
        *,
        persistence: Persistence | None = None,
        access: Access | None = None,
        clock: Clock = SYSTEM_CLOCK,
        ids: Callable[[], str] | None = None,
        host_id: str | None = None,
        lease_ttl: float = 30.0,
        summary_timeout: float = 120.0,
        max_cached_threads: int = 1000,
    ) -> None:
        if (
            isinstance(max_cached_threads, bool)
            or not isinstance(max_cached_threads, int)
            or max_cached_threads < 1
        ):
            raise InvalidInputError(
                f"max_cached_threads must be a whole number of at least 1, got "
                f"{max_cached_threads!r}; pass e.g. max_cached_threads=1000"
            )
        for name, seconds in (("lease_ttl", lease_ttl), ("summary_timeout", summary_timeout)):
            if not isinstance(seconds, int | float) or not seconds > 0:
                raise InvalidInputError(
                    f"{name} must be a positive number of seconds, got {seconds!r}; "
                    f"pass e.g. {name}=30"
                )
        self.persistence: Persistence = (
            persistence if persistence is not None else memory_persistence()
        )
        self.access = access
        self.clock = clock
        self._next_id = ids or TidGenerator(clock).next
        self.host_id = host_id or f"host-{self._next_id()}"
        self.lease_ttl = lease_ttl
        self.summary_timeout = summary_timeout
        self.max_cached_threads = max_cached_threads
        # Least recently used first. Locks live as long as someone holds or
        # awaits them, so the map of them never outgrows the work in flight.
        self._logs: OrderedDict[str, ThreadLog] = OrderedDict()
        self._locks: WeakValueDictionary[str, asyncio.Lock] = WeakValueDictionary()
        self.sessions = Sessions(self)

    # -- users and threads ------------------------------------------------------
    async def get_user_of_request(self, request: Any) -> User | None:
        """The user of a request by ``access.get_user`` (None without access)."""
        if self.access is None:
            return None
        user = self.access.get_user(request)
        if inspect.isawaitable(user):
            user = await user
        return as_user(user)

    async def open(
        self,
        harness: Harness,
        *,
        thread_id: str | None = None,
        user: User | None = None,
        create: bool = True,
    ) -> Session:
        """Open a thread of ``harness``; a new thread is created with ``user`` as owner.

        With ``create=False`` an unknown thread raises ``ThreadNotFoundError``
        (for reads and answers, which must not start a thread).
        """
        tenant = self._tenant(user)
        thread_id = self._check_thread_id(thread_id) if thread_id is not None else self._next_id()
        entry = await get_entry(self.persistence, tenant, thread_id)
        session = Session(self, harness, tenant, thread_id, user)
        if entry is None and not create:
            raise ThreadNotFoundError(
                f"no thread {thread_id!r} here; send a message to start it", thread_id=thread_id
            )
        if entry is None:
            entry, created = await create_entry(
                self.persistence, self._new_entry(tenant, thread_id, harness.name, user)
            )
            if created:
                return session
        if entry.harness != harness.name:
            raise WrongHarnessError(
                f"thread {thread_id!r} belongs to harness {entry.harness!r}, not "
                f"{harness.name!r}; open it with its own harness, or transfer it",
                thread_id=thread_id,
            )
        authorize(self.access, user=user, members=entry.members, action="read", thread_id=thread_id)
        return session

    def _new_entry(
        self,
        tenant: str,
        thread_id: str,
        harness: str,
        user: User | None,
        metadata: dict[str, Any] | None = None,
    ) -> ThreadEntry:
        owner = user.id if user is not None else None
        return ThreadEntry(
            tenant=tenant,
            thread_id=thread_id,
            harness=harness,
            owner=owner,
            members={owner: "owner"} if owner else {},
            metadata=metadata or {},
            created_at=format_datetime(self.clock.now()),
        )

    def _tenant(self, user: User | None) -> str:
        require_user(self.access, user)
        if user is not None and not isinstance(user, User):
            raise InvalidInputError(
                f"user must be a User, got {type(user).__name__}; pass "
                "User(id=..., tenant_id=...) or what host.get_user_of_request returned"
            )
        return user.tenant_id if user is not None else DEFAULT_TENANT

    @staticmethod
    def _check_thread_id(thread_id: str) -> str:
        return check_id("thread_id", thread_id)

    @staticmethod
    def _stream(tenant: str, thread_id: str) -> str:
        return stream_name(tenant, thread_id)

    async def _entry(self, tenant: str, thread_id: str) -> ThreadEntry:
        entry = await get_entry(self.persistence, tenant, thread_id)
        if entry is None:
            # Another tenant's thread is "not found" too: tenants never see each other.
            raise ThreadNotFoundError(
                f"no thread {thread_id!r} here; open it with host.open(...) first",
                thread_id=thread_id,
            )
        return entry

    async def _authorize(self, session: Session, *actions: Action) -> ThreadEntry:
        """Check that the session's user holds one of ``actions`` on its thread."""
        return await self._check(session.tenant, session.thread_id, session.user, *actions)

    async def _check(
        self, tenant: str, thread_id: str, user: User | None, *actions: Action
    ) -> ThreadEntry:
        entry = await self._entry(tenant, thread_id)
        error: Exception | None = None
        for action in actions:
            try:
                authorize(
                    self.access,
                    user=user,
                    members=entry.members,
                    action=action,
                    thread_id=thread_id,
                )
                return entry
            except UserError as exc:
                error = error or exc
        assert error is not None
        raise error

    # -- the log ----------------------------------------------------------------
    def _log(self, stream: str) -> ThreadLog:
        log = self._logs.get(stream)
        if log is None:
            log = ThreadLog(
                self.persistence,
                stream,
                owner=self.host_id,
                lease_ttl=self.lease_ttl,
                clock=self.clock,
            )
            self._logs[stream] = log
            self._forget_idle_threads()
        else:
            self._logs.move_to_end(stream)
        return log

    def _forget_idle_threads(self) -> None:
        """Drop the cached state of the least recently used idle threads beyond the cap.

        A thread whose lease this host holds, or that a call works on now,
        stays: forgetting it would let a second ``ThreadLog`` of the same
        stream write beside the first in this process.
        """
        excess = len(self._logs) - self.max_cached_threads
        for stream in list(self._logs):
            if excess <= 0:
                return
            lock = self._locks.get(stream)
            if self._logs[stream].holds_lease or (lock is not None and lock.locked()):
                continue
            del self._logs[stream]
            excess -= 1

    async def _read_state(self, tenant: str, thread_id: str) -> ThreadState:
        """The thread as its log says now, to read (a write decides under ``_writing``)."""
        return await self._log(self._stream(tenant, thread_id)).view()

    @asynccontextmanager
    async def _writing(self, tenant: str, thread_id: str) -> AsyncIterator[ThreadLog]:
        """Hold the thread in this process (its lock), with the log's state read fresh.

        The log's lease is taken by the first append (``ThreadLog.append``),
        not here: a call that looks at the state and rejects writes nothing
        and takes no lease, so it never keeps another host off the thread.
        What a call decides from stays true when it appends: the append names
        ``expected_seq`` and fails if anyone wrote after this read.
        """
        stream = self._stream(tenant, thread_id)
        lock = self._locks.get(stream)
        if lock is None:
            lock = self._locks[stream] = asyncio.Lock()
        async with lock:
            log = self._log(stream)
            await log.refresh()
            if log.state.running is not None:
                await self._close_abandoned_turn(log)
            yield log

    async def _close_abandoned_turn(self, log: ThreadLog) -> None:
        """Close the turn the log shows in flight, once, as the log says.

        No task of this process runs it (we hold the lock). If another host
        holds the lease, that host runs it and ``own()`` raises
        ``LogOwnedElsewhereError``; otherwise a host stopped in the middle of it.
        """
        # The lease first, then the read: what we close is then what the log
        # held once nobody else could (rightly) write.
        await log.own()
        for attempt in range(_TAKEOVER_ATTEMPTS):
            await log.refresh()
            running = log.state.running
            if running is None:
                return
            records = close_interrupted_turn(
                log.state, running, next_id=self._next_id, now=format_datetime(self.clock.now())
            )
            try:
                with takeover_span(
                    stream=log.stream,
                    run_id=running,
                    link=log.state.runs[running].trace,
                ):
                    await log.append(records)
                return
            except LogConflictError:
                # The stalled host wrote after all (it may have finished its turn): look again.
                if attempt == _TAKEOVER_ATTEMPTS - 1:
                    raise

    # -- host-level -------------------------------------------------------------
    async def events(self, *, after: int = 0) -> AsyncIterator[HostEvent]:
        """Host events (``transferred``) from ``after`` on, live, forever."""
        async for record in self.persistence.watch(HOST_STREAM, after=after):
            yield HostEvent.from_record(record)

    async def transfer(
        self,
        *,
        from_: Endpoint,
        to: Endpoint,
        envelope: Envelope | None = None,
        user: User | None = None,
        transfer_id: str | None = None,
    ) -> TransferResult:
        """Move a conversation to a thread of another (or the same) harness; see transfer.py."""
        from .transfer import run_transfer

        return await run_transfer(
            self, from_=from_, to=to, envelope=envelope, user=user, transfer_id=transfer_id
        )

    async def fork(
        self,
        harness: Harness,
        *,
        thread_id: str,
        user: User | None = None,
        new_thread_id: str | None = None,
    ) -> Session:
        """Copy a thread's settled transcript into a new thread of the same harness."""
        from .transfer import run_fork

        return await run_fork(
            self, harness, thread_id=thread_id, user=user, new_thread_id=new_thread_id
        )

    async def close(self) -> None:
        """Give up the leases of the thread logs this host owns (the persistence stays open)."""
        for log in self._logs.values():
            await log.release()


class Sessions:
    """``host.sessions``: members and roles, and the list of threads a user may see."""

    def __init__(self, host: HarnessHost) -> None:
        self._host = host

    async def share(
        self, *, thread_id: str, user_id: str, role: str, user: User | None = None
    ) -> ThreadEntry:
        """Add (or change) a member of a thread; needs the ``share`` action."""
        host = self._host
        tenant = host._tenant(user)
        host._check_thread_id(thread_id)
        if not isinstance(user_id, str) or not user_id or "/" in user_id:
            raise InvalidInputError(
                f"user_id must be a non-empty user id without '/', got {user_id!r}; "
                "pass the id of the user to share the thread with"
            )
        if not isinstance(role, str) or not role or role == "owner":
            raise InvalidInputError(
                f"role must be a role name other than 'owner' (a thread has one owner, who "
                f"opened it), got {role!r}; share with a role such as {ROLES_HINT}"
            )
        await host._check(tenant, thread_id, user, "share")

        def change(value: dict[str, Any]) -> None:
            members = dict(value.get("members") or {})
            if members.get(user_id) == "owner":
                raise InvalidInputError(
                    f"{user_id!r} owns thread {thread_id!r}; an owner keeps that role"
                )
            members[user_id] = role
            value["members"] = members

        return await update_entry(host.persistence, tenant, thread_id, change)

    async def list(
        self,
        *,
        user: User | None = None,
        harness: str | None = None,
        waiting_for_human: bool | None = None,
    ) -> list[ThreadSummary]:
        """Threads of the user's tenant that the user may read (for an operator console)."""
        host = self._host
        tenant = host._tenant(user)
        found = []
        for entry in await list_entries(host.persistence, tenant):
            if harness is not None and entry.harness != harness:
                continue
            try:
                authorize(
                    host.access,
                    user=user,
                    members=entry.members,
                    action="read",
                    thread_id=entry.thread_id,
                )
            except UserError:
                continue
            state = await host._read_state(tenant, entry.thread_id)
            waiting = state.paused
            if waiting_for_human is not None and waiting != waiting_for_human:
                continue
            found.append(ThreadSummary(entry, waiting))
        return found
