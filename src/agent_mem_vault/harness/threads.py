"""The threads a host serves: what the host, its sessions and transfers share.

One home for the small surface all three need — ids, tenants, access checks,
index entries, each thread's log and the one lock per thread — so that
:mod:`.host` builds on :mod:`.session` and :mod:`.transfer`, and they build on
this module, never on each other's private functions.

**Who holds a thread's lock.** A thread's lock (one ``asyncio.Lock`` per
thread in this process) is held by the one call that writes the thread, from
the read its decision rests on to its last append: a send holds it for its
whole turn. Code that runs *inside* that call — a tool of the turn, an
agent, a router — runs in the holder's task, so when it writes the same
thread (a tool that transfers its own conversation, or records a summary's
usage) :meth:`Threads.writing` gives it the held log instead of waiting for a
lock that will only be released when the tool returns. Any other task waits
its turn as before. Re-entry reads nothing new and closes no turn: the log is
the holder's, current, and its running turn is the holder's own.

Across processes and hosts the log's lease and ``expected_seq`` do the
lock's job (:mod:`.threadlog`); on one machine a host that died is known dead
at once (:mod:`.liveness`).
"""

from __future__ import annotations

import asyncio
import heapq
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakValueDictionary

from ..core.clock import Clock, format_datetime
from ..core.errors import InvalidInputError, UserError
from ..store import LogConflictError, Persistence
from .access import DEFAULT_TENANT, Access, Action, User, authorize, require_user
from .errors import ThreadNotFoundError
from .index import ThreadEntry, get_entry
from .liveness import HostLiveness
from .log import check_id, stream_name
from .spans import takeover_span
from .state import ThreadState
from .takeover import close_interrupted_turn
from .threadlog import ThreadLog, lease_name

__all__ = ["Threads"]

_TAKEOVER_ATTEMPTS = 5

# The logs whose lock the running task (and the tasks it started) holds, by
# stream. A ContextVar, so that it follows the call chain and nothing else.
_HELD: ContextVar[dict[str, _Hold] | None] = ContextVar("harness_held_logs", default=None)


@dataclass(eq=False, slots=True)
class _Hold:
    """One call's hold on a thread; ``active`` ends with the call (a task it left behind
    that writes later waits for the lock like anyone else)."""

    log: ThreadLog
    active: bool = True


@dataclass(eq=False, repr=False, kw_only=True)
class Threads:
    """A host's threads on one persistence: ids, access, entries, logs and locks."""

    persistence: Persistence
    access: Access | None
    clock: Clock
    next_id: Callable[[], str]
    host_id: str
    lease_ttl: float
    max_cached: int
    liveness: HostLiveness | None = None
    # Least recently used first. Locks live as long as someone holds or
    # awaits them, so the map of them never outgrows the work in flight.
    _logs: OrderedDict[str, ThreadLog] = field(init=False, default_factory=OrderedDict)
    # The leases this host still holds on threads whose state it forgot
    # (stream -> until, on the monotonic clock), and when each lapses,
    # soonest first: a few floats per thread written in the last lease_ttl.
    _leases: dict[str, float] = field(init=False, default_factory=dict)
    _lapses: list[tuple[float, str]] = field(init=False, default_factory=list)
    _locks: WeakValueDictionary[str, asyncio.Lock] = field(
        init=False, default_factory=WeakValueDictionary
    )

    # -- who and which --------------------------------------------------------
    def tenant(self, user: User | None) -> str:
        """The user's tenant (``"default"`` without a user); refuses a missing user under access."""
        require_user(self.access, user)
        if user is not None and not isinstance(user, User):
            raise InvalidInputError(
                f"user must be a User, got {type(user).__name__}; pass "
                "User(id=..., tenant_id=...) or what host.get_user_of_request returned"
            )
        return user.tenant_id if user is not None else DEFAULT_TENANT

    @staticmethod
    def check_thread_id(thread_id: str) -> str:
        return check_id("thread_id", thread_id)

    @staticmethod
    def stream(tenant: str, thread_id: str) -> str:
        return stream_name(tenant, thread_id)

    def now(self) -> str:
        return format_datetime(self.clock.now())

    def new_entry(
        self,
        tenant: str,
        thread_id: str,
        harness: str,
        user: User | None,
        metadata: dict[str, Any] | None = None,
    ) -> ThreadEntry:
        """The index entry of a new thread: ``user`` owns it."""
        owner = user.id if user is not None else None
        return ThreadEntry(
            tenant=tenant,
            thread_id=thread_id,
            harness=harness,
            owner=owner,
            members={owner: "owner"} if owner else {},
            metadata=metadata or {},
            created_at=self.now(),
        )

    async def entry(self, tenant: str, thread_id: str) -> ThreadEntry:
        entry = await get_entry(self.persistence, tenant, thread_id)
        if entry is None:
            # Another tenant's thread is "not found" too: tenants never see each other.
            raise ThreadNotFoundError(
                f"no thread {thread_id!r} here; open it with host.open(...) first",
                thread_id=thread_id,
            )
        return entry

    async def check(
        self,
        tenant: str,
        thread_id: str,
        user: User | None,
        *actions: Action,
        entry: ThreadEntry | None = None,
    ) -> ThreadEntry:
        """The thread's entry if ``user`` holds one of ``actions`` on it, else the first refusal.

        ``entry``: the entry as the same call just read it (open, then send),
        checked as it is instead of read again.
        """
        if entry is None:
            entry = await self.entry(tenant, thread_id)
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

    # -- logs -------------------------------------------------------------------
    def log(self, tenant: str, thread_id: str) -> ThreadLog:
        """This host's one ``ThreadLog`` of the thread (read back from the store if forgotten)."""
        stream = self.stream(tenant, thread_id)
        log = self._logs.get(stream)
        if log is None:
            log = ThreadLog(
                self.persistence,
                stream,
                owner=self.host_id,
                lease_ttl=self.lease_ttl,
                clock=self.clock,
                liveness=self.liveness,
            )
            until = self._leases.pop(stream, None)
            if until is not None:
                log.adopt_lease(until)
            self._logs[stream] = log
            self._forget_idle()
        else:
            self._logs.move_to_end(stream)
        return log

    @property
    def cached(self) -> int:
        """How many threads' state this host keeps in memory now."""
        return len(self._logs)

    @property
    def leases_without_state(self) -> int:
        """How many threads this host holds the lease of with their state forgotten."""
        return len(self._leases)

    def _forget_idle(self) -> None:
        """Drop the state of the least recently used threads beyond the cap, and lapsed leases.

        The work is the number of threads forgotten and of leases lapsed, never
        the number cached, so a host that touched 100,000 threads in one lease
        period pays per new thread what a host that touched 100 does.

        A thread a call works on now (it holds the thread's lock, or keeps its
        lease renewed) stays: forgetting it would let a second ``ThreadLog``
        of the same stream write beside the first in this process. Every
        write holds the lock, so a thread that nobody holds can be read back
        from its log; only its lease is kept (``_leases``), so that the next
        ``ThreadLog`` of it renews on schedule and ``close()`` gives it up.
        """
        now = self.clock.monotonic()
        while self._lapses and self._lapses[0][0] <= now:
            until, stream = heapq.heappop(self._lapses)
            if self._leases.get(stream) == until:
                del self._leases[stream]
        busy = 0
        while len(self._logs) - busy > self.max_cached:
            stream, log = self._logs.popitem(last=False)
            lock = self._locks.get(stream)
            if log.renewing_now or (lock is not None and lock.locked()):
                self._logs[stream] = log  # in use: counted as just used
                busy += 1
                continue
            if log.holds_lease:
                until = self._leases[stream] = log.lease_until
                heapq.heappush(self._lapses, (until, stream))

    async def read_state(self, tenant: str, thread_id: str) -> ThreadState:
        """The thread as its log says now, to read (a write decides under :meth:`writing`)."""
        return await self.log(tenant, thread_id).view()

    @asynccontextmanager
    async def writing(self, tenant: str, thread_id: str) -> AsyncIterator[ThreadLog]:
        """Hold the thread (its lock), with the log's state current; see the module doc.

        The log's lease is taken by the first append (``ThreadLog.append``),
        not here: a call that looks at the state and rejects writes nothing
        and takes no lease, so it never keeps another host off the thread.
        What a call decides from stays true when it appends: the append names
        ``expected_seq`` and fails if anyone wrote after this read.
        """
        stream = self.stream(tenant, thread_id)
        held = _HELD.get() or {}
        hold = held.get(stream)
        if hold is not None and hold.active:
            yield hold.log  # the caller runs inside the holder: write through its hold
            return
        lock = self._locks.get(stream)
        if lock is None:
            lock = self._locks[stream] = asyncio.Lock()
        async with lock:
            log = self.log(tenant, thread_id)
            hold = _Hold(log)
            token = _HELD.set({**held, stream: hold})
            try:
                await log.catch_up()
                if log.state.running is not None:
                    await self._close_abandoned_turn(log)
                yield log
            finally:
                hold.active = False
                _HELD.reset(token)

    async def _close_abandoned_turn(self, log: ThreadLog) -> None:
        """Close the turn the log shows in flight, once, as the log says.

        No task of this process runs it (we hold the lock, and re-entry never
        gets here). If another host holds the lease, that host runs it and
        ``own()`` raises ``LogOwnedElsewhereError``; otherwise a host stopped
        in the middle of it.
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
                log.state, running, next_id=self.next_id, now=self.now()
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

    async def close(self) -> None:
        """Give up the leases of the thread logs this host owns."""
        for log in list(self._logs.values()):
            await log.release()
        leases, self._leases, self._lapses = self._leases, {}, []
        for stream in leases:
            await self.persistence.release_lease(lease_name(stream), self.host_id)
