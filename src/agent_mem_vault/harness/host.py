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
  leases up at once. On one machine (a SQLite file) a host whose process
  died is known dead at once, by an OS lock that died with it
  (:mod:`.liveness`): a host restarted after a crash serves its threads
  without waiting for the old leases.

What the host, its sessions and transfers share (ids, access checks, logs,
the per-thread lock and who holds it) lives in :mod:`.threads`; this module
builds on :mod:`.session` and :mod:`.transfer`, never the other way round.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal

from ..core.clock import SYSTEM_CLOCK, Clock
from ..core.errors import InvalidInputError, UserError
from ..core.ids import TidGenerator
from ..store import Persistence, memory_persistence
from .access import Access, User, as_user, authorize
from .copies import run_fork
from .definitions import Harness
from .errors import ThreadNotFoundError, WrongHarnessError
from .events import HOST_STREAM, HostEvent
from .index import ThreadEntry, create_entry, get_entry, list_entries, update_entry
from .liveness import liveness_for
from .messages import FilePart
from .session import Session, TurnResult, check_send
from .threads import Threads
from .transfer import Endpoint, Envelope, TransferResult, run_transfer

__all__ = ["HarnessHost", "Sessions", "ThreadSummary"]

ROLES_HINT = "member or operator"


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
    when it is next used (its lease is kept, a few bytes, until it lapses or
    the host closes). ``async with HarnessHost(...) as host:`` closes it.
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
        store = persistence if persistence is not None else memory_persistence()
        self.access = access
        self.clock = clock
        next_id = ids or TidGenerator(clock).next
        self.host_id = host_id or f"host-{next_id()}"
        self.lease_ttl = lease_ttl
        self.summary_timeout = summary_timeout
        self.max_cached_threads = max_cached_threads
        self._liveness = liveness_for(store, self.host_id)
        self.threads = Threads(
            persistence=store,
            access=access,
            clock=clock,
            next_id=next_id,
            host_id=self.host_id,
            lease_ttl=lease_ttl,
            max_cached=max_cached_threads,
            liveness=self._liveness,
        )
        self.sessions = Sessions(self)

    @property
    def persistence(self) -> Persistence:
        """Where the threads live (their logs, index entries, leases)."""
        return self.threads.persistence

    @persistence.setter
    def persistence(self, store: Persistence) -> None:
        self.threads.persistence = store

    async def __aenter__(self) -> HarnessHost:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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
        session, _ = await self._open(harness, thread_id=thread_id, user=user, create=create)
        return session

    async def send(
        self,
        harness: Harness,
        text: str,
        *,
        thread_id: str,
        user: User | None = None,
        as_: Literal["user", "operator"] = "user",
        files: Sequence[FilePart] = (),
        input_id: str | None = None,
    ) -> TurnResult:
        """``(await open(...)).send(...)`` in one call, reading the thread's index entry once.

        The entry ``open`` reads (or creates) is the one the send's access
        check looks at: both checks see the thread as it is at this call. A
        user's message starts the thread if it is new; an operator's reply
        never does (an unknown thread raises ``ThreadNotFoundError``).
        """
        files = check_send(text, as_, files, input_id)  # bad input starts no thread
        session, entry = await self._open(
            harness, thread_id=thread_id, user=user, create=as_ == "user"
        )
        return await session.send_checked(
            text, as_=as_, files=files, input_id=input_id, entry=entry
        )

    async def _open(
        self, harness: Harness, *, thread_id: str | None, user: User | None, create: bool
    ) -> tuple[Session, ThreadEntry]:
        threads = self.threads
        tenant = threads.tenant(user)
        thread_id = (
            threads.check_thread_id(thread_id) if thread_id is not None else threads.next_id()
        )
        entry = await get_entry(self.persistence, tenant, thread_id)
        session = Session(threads, harness, tenant, thread_id, user)
        if entry is None and not create:
            raise ThreadNotFoundError(
                f"no thread {thread_id!r} here; send a message to start it", thread_id=thread_id
            )
        if entry is None:
            entry, created = await create_entry(
                self.persistence, threads.new_entry(tenant, thread_id, harness.name, user)
            )
            if created:
                return session, entry
        if entry.harness != harness.name:
            raise WrongHarnessError(
                f"thread {thread_id!r} belongs to harness {entry.harness!r}, not "
                f"{harness.name!r}; open it with its own harness, or transfer it",
                thread_id=thread_id,
            )
        authorize(self.access, user=user, members=entry.members, action="read", thread_id=thread_id)
        return session, entry

    # -- host-level -------------------------------------------------------------
    async def events(self, *, after: int = 0) -> AsyncIterator[HostEvent]:
        """Host events (``transferred``) from ``after`` on, live, forever."""
        async for record in self.persistence.watch(HOST_STREAM, after=after):
            yield HostEvent.from_record(record)

    async def transfer(
        self,
        *,
        from_: Endpoint | tuple[Harness, str],
        to: Endpoint | tuple[Harness, str | None] | Harness,
        envelope: Envelope | None = None,
        user: User | None = None,
        transfer_id: str | None = None,
    ) -> TransferResult:
        """Move a conversation to a thread of another (or the same) harness; see transfer.py.

        A tool may transfer the thread it runs in: the transfer writes the
        source through the turn's own hold (see :mod:`.threads`), the tool call
        stays behind unsettled, and the turn goes on.
        """
        return await run_transfer(
            self.threads,
            from_=from_,
            to=to,
            envelope=envelope,
            user=user,
            transfer_id=transfer_id,
            summary_timeout=self.summary_timeout,
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
        new_id = await run_fork(
            self.threads, harness, thread_id=thread_id, user=user, new_thread_id=new_thread_id
        )
        return Session(self.threads, harness, self.threads.tenant(user), new_id, user)

    async def close(self) -> None:
        """Give up the leases of the thread logs this host owns (the persistence stays open)."""
        await self.threads.close()
        if self._liveness is not None:
            self._liveness.close()


class Sessions:
    """``host.sessions``: members and roles, and the list of threads a user may see."""

    def __init__(self, host: HarnessHost) -> None:
        self._threads = host.threads

    async def share(
        self, *, thread_id: str, user_id: str, role: str, user: User | None = None
    ) -> ThreadEntry:
        """Add (or change) a member of a thread; needs the ``share`` action."""
        threads = self._threads
        tenant = threads.tenant(user)
        threads.check_thread_id(thread_id)
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
        await threads.check(tenant, thread_id, user, "share")

        def change(value: dict[str, Any]) -> None:
            members = dict(value.get("members") or {})
            if members.get(user_id) == "owner":
                raise InvalidInputError(
                    f"{user_id!r} owns thread {thread_id!r}; an owner keeps that role"
                )
            members[user_id] = role
            value["members"] = members

        return await update_entry(threads.persistence, tenant, thread_id, change)

    async def list(
        self,
        *,
        user: User | None = None,
        harness: str | None = None,
        waiting_for_human: bool | None = None,
    ) -> list[ThreadSummary]:
        """Threads of the user's tenant that the user may read (for an operator console)."""
        threads = self._threads
        tenant = threads.tenant(user)
        found = []
        for entry in await list_entries(threads.persistence, tenant):
            if harness is not None and entry.harness != harness:
                continue
            try:
                authorize(
                    threads.access,
                    user=user,
                    members=entry.members,
                    action="read",
                    thread_id=entry.thread_id,
                )
            except UserError:
                continue
            state = await threads.read_state(tenant, entry.thread_id)
            waiting = state.paused
            if waiting_for_human is not None and waiting != waiting_for_human:
                continue
            found.append(ThreadSummary(entry, waiting))
        return found
