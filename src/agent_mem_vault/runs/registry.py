"""The run registry: one current run per agent, takeovers, and at-most-once handoff records.

Built only on the shared store primitives, so it runs unchanged on memory,
SQLite and PostgreSQL:

* **the agent's run log** (stream ``runs/<agent>``) is the truth about who is
  current. Starting a run appends ``run.started`` with ``expected_seq`` = the
  last position seen; if another process started a run in between, the append
  fails and we re-read and try again. So takeovers are totally ordered, the
  current run is the last entry, and the run that replaced run *n* is entry
  *n+1*. A run checks it is still current with one ``last_seq`` read.
* **handoff records** (collection ``runs.handoffs``, key ``<agent>/<toRun>``)
  are written with ``insert`` — put-if-absent — so for each new run exactly
  one record lands, whoever races; a loser gets the record that landed.
  Nothing here updates or deletes them.
* **leases** (``runs/<agent>/<run>``), renewed by ``run.heartbeat()``, say
  whether a run is alive. When a new run takes over from a run whose lease
  has expired (it crashed, or never heartbeats), the registry writes the
  handoff record for it at once, since it will not.
* ``runs.runs`` (``<agent>/<run>`` → where the run is in the log) and
  ``runs.agents`` (the list of agents) are indexes, rebuilt from the log when
  missing.
* **run TIDs grow along the chain**: a new run's TID is minted above the TID
  of the run it takes over, so ``fromRun < toRun`` always, handoff records
  sort in takeover order, and hosts whose clocks disagree (or two processes
  that mint the same TID in the same microsecond) cannot produce a handoff
  from a run to itself.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..atproto.cbor import record_cid
from ..core import tracing
from ..core.clock import SYSTEM_CLOCK, Clock, format_datetime
from ..core.errors import AgentMemVaultError, InvalidInputError, NotFoundError, UnavailableError
from ..core.ids import TidGenerator
from ..core.names import validate_agent
from ..store.base import Lease, LogConflictError, Persistence, scan_all
from .errors import RunStillCurrent, RunStopped, RunTakenOver
from .models import AgentStatus, HandoffEntry, RunInfo, RunState
from .process import is_known_dead, process_of
from .records import DEFAULT_GENERATOR, Generator, build_handoff_record, check_handoff_record

__all__ = ["Run", "RunRegistry", "validate_agent"]

AGENTS = "runs.agents"
RUNS = "runs.runs"
HANDOFFS = "runs.handoffs"
STOPPED = "runs.stopped"
STARTED = "run.started"
_START_ATTEMPTS = 100
_PROBE_FROM, _PROBE_TO = "2222222222222", "2222222222223"
_log = logging.getLogger(__name__)

# Called with each record that lands (not with records that were already
# there); may be a plain function or a coroutine function.
HandoffListener = Callable[[HandoffEntry], object]


def _stream(agent: str) -> str:
    return f"runs/{agent}"


def _lease(agent: str, run: str) -> str:
    return f"runs/{agent}/{run}"


def _run_key(agent: str, run: str) -> str:
    # Per agent: two agents' runs minted on two hosts may share a TID.
    return f"{agent}/{run}"


class Run:
    """A run of an agent, held by the code doing the agent's work.

    Call :meth:`ensure_current` before each side effect and :meth:`heartbeat`
    more often than the lease lasts; when either raises ``RunTakenOver``, stop
    and call :meth:`write_handoff`.

    >>> run = await registry.start_run("support-bot")  # doctest: +SKIP
    >>> await run.ensure_current()  # doctest: +SKIP
    """

    def __init__(self, registry: RunRegistry, info: RunInfo) -> None:
        self._registry = registry
        self.info = info

    @property
    def tid(self) -> str:
        """The run's TID: its id, and the record key of the handoff to it."""
        return self.info.run

    @property
    def agent(self) -> str:
        return self.info.agent

    def __repr__(self) -> str:
        return f"Run(agent={self.agent!r}, tid={self.tid!r})"

    async def successor(self) -> str | None:
        """The TID of the run that took over from this one, or None while it is current."""
        return await self._registry._successor(self.info)

    async def ensure_current(self) -> None:
        """Return if this run is still the agent's current run; raise ``RunTakenOver`` if not."""
        store = self._registry.store
        if await store.last_seq(_stream(self.agent)) != self.info.seq:
            by = await self.successor()
            raise RunTakenOver(self.agent, self.tid, by or "?")

    async def heartbeat(self) -> None:
        """Renew this run's lease, so it counts as alive; raises ``RunTakenOver`` once replaced.

        A run that was stopped (:meth:`stop`, or ``runs stop`` from a shell) is
        not brought back to life: ``RunStopped`` is raised instead.
        """
        await self.ensure_current()
        if await self._registry.store.get(STOPPED, _run_key(self.agent, self.tid)) is not None:
            raise RunStopped(
                f"run {self.tid} of agent {self.agent!r} was stopped; start a new run",
                agent=self.agent,
                run=self.tid,
            )
        await self._registry.store.acquire_lease(
            _lease(self.agent, self.tid), self.tid, self.info.lease_seconds
        )

    async def stop(self) -> None:
        """End this run on purpose: the run that takes over next writes its record at once.

        Idempotent. The run stays the agent's current run until another starts;
        it no longer counts as alive, and its lease is not renewed again. If it
        was already taken over, its handoff record is written now.
        """
        await self._registry.stop_run(self.agent, self.tid)

    async def write_handoff(self) -> dict[str, Any]:
        """Write the handoff record to the run that took over; returns the record that landed.

        At most once: if a record for that run is already there (a retry, a
        second copy of this run, the registry writing it after a lapsed
        lease), nothing is written and that record is returned.
        """
        to_run = await self.successor()
        if to_run is None:
            raise RunStillCurrent(
                f"run {self.tid} of agent {self.agent!r} is still current: nobody took it "
                "over, so there is no handoff to write",
                agent=self.agent,
                run=self.tid,
            )
        entry = await self._registry._write_handoff(self.info, to_run, "run")
        await self._registry.store.release_lease(_lease(self.agent, self.tid), self.tid)
        return entry.record


class RunRegistry:
    """Runs of agents over a :class:`~agent_mem_vault.store.Persistence`.

    All methods are coroutines (the store is async, and so is PostgreSQL).

    >>> registry = RunRegistry(memory_persistence())  # doctest: +SKIP
    >>> old = await registry.start_run("support-bot")  # doctest: +SKIP
    >>> new = await registry.start_run("support-bot")  # doctest: +SKIP
    >>> await old.ensure_current()  # doctest: +SKIP
    Traceback (most recent call last):
    agent_mem_vault.runs.errors.RunTakenOver: run ... was taken over by run ...
    >>> (await old.write_handoff())["toRun"] == new.tid  # doctest: +SKIP
    True
    """

    def __init__(
        self,
        persistence: Persistence,
        *,
        clock: Clock = SYSTEM_CLOCK,
        lease_seconds: float = 30.0,
        tids: TidGenerator | None = None,
        on_handoff: HandoffListener | None = None,
    ) -> None:
        self.store = persistence
        self._clock = clock
        self.lease_seconds = lease_seconds
        self._tids = tids or TidGenerator(clock)
        self._on_handoff = on_handoff

    # -- starting and taking over ---------------------------------------------
    async def start_run(
        self,
        agent: str,
        generator: Generator | Mapping[str, Any] | None = None,
        *,
        lease_seconds: float | None = None,
        pid: int | Literal["unknown"] | None = None,
    ) -> Run:
        """Mint a run TID and make it the agent's current run, taking over from the last one.

        ``generator`` names the software doing the run (it goes into the
        handoff record this run writes when it is replaced); by default,
        agent-mem-vault itself. ``pid`` is the process doing the run (default:
        this one); once it is known dead, the run counts as stopped and a
        takeover writes its record at once (see :mod:`.process`). ``"unknown"``
        records no process, for a caller that cannot tell which process does the
        run and is not that process itself: the lease alone then says whether the
        run is alive.
        """
        validate_agent(agent)
        gen = _generator(generator)
        ttl = _lease_seconds(self.lease_seconds if lease_seconds is None else lease_seconds)
        # Refuse a generator the lexicon would refuse now, not when the run is replaced.
        build_handoff_record(
            from_run=_PROBE_FROM, to_run=_PROBE_TO, created_at=self._clock.now(), generator=gen
        )
        if await self.store.get(AGENTS, agent) is None:  # a read spares a write transaction
            await self.store.insert(AGENTS, agent, {"agent": agent})
        stream = _stream(agent)
        process = None if pid == "unknown" else process_of(pid)
        tid: str | None = None
        for _ in range(_START_ATTEMPTS):
            last = await self.store.last_seq(stream)
            previous = await self._entry(agent, last) if last else None
            if tid is None or (previous is not None and tid <= previous.run):
                tid = await self._mint(agent, ttl, above=previous, replacing=tid)
            data = {
                "run": tid,
                "previous": previous.run if previous else None,
                "startedAt": format_datetime(self._clock.now()),
                "generator": gen.to_json(),
                "leaseSeconds": ttl,
                "process": None if process is None else process.to_json(),
            }
            try:
                (rec,) = await self.store.append(stream, [(STARTED, data)], expected_seq=last)
            except LogConflictError:
                continue  # another run started in between: take over from it instead
            info = RunInfo.from_json(agent, rec.seq, rec.data)
            await self._after_start(info, previous)
            return Run(self, info)
        raise UnavailableError(
            f"could not start a run of {agent!r}: other runs kept starting at the same "
            "moment; try again",
            code="run_start_contention",
        )

    async def _mint(
        self, agent: str, ttl: float, *, above: RunInfo | None, replacing: str | None
    ) -> str:
        """A run TID above the run it will take over, with its lease already held."""
        if above is not None:
            self._tids.advance_past(above.run)
        tid = self._tids.next()
        # The lease is taken before the run exists so that no observer ever
        # sees a current run without one and takes it for crashed.
        await self.store.acquire_lease(_lease(agent, tid), tid, ttl)
        if replacing is not None:
            await self.store.release_lease(_lease(agent, replacing), replacing)
        return tid

    async def _after_start(self, info: RunInfo, previous: RunInfo | None) -> None:
        """Index the new run and acknowledge a lapsed predecessor: repairable, so never fatal.

        The run is current once its log entry landed. Failing now would make
        the caller start yet another run; both steps are repaired later (the
        index is rebuilt from the log, ``reap`` writes the record), so a
        failure is logged instead.
        """
        try:
            with tracing.span(
                "runs.takeover" if previous is not None else "runs.start",
                {
                    "agent_mem_vault.runs.agent": info.agent,
                    "agent_mem_vault.runs.run": info.run,
                    "agent_mem_vault.runs.previous": previous.run if previous else None,
                },
            ):
                await self.store.insert(
                    RUNS, _run_key(info.agent, info.run), {"agent": info.agent, "seq": info.seq}
                )
                if previous is not None and await self._own_lease(previous) is None:
                    # Lapsed, stopped, or its process is known dead (_own_lease says so).
                    await self._write_handoff(previous, info.run, "registry")
        except AgentMemVaultError as exc:
            _log.warning(
                "run %s of %r started, but indexing it or writing the handoff of the lapsed "
                "run %s failed (%s); reap() writes that record later",
                info.run,
                info.agent,
                previous.run if previous else "-",
                exc,
            )

    async def stop_run(self, agent: str, tid: str | None = None) -> RunInfo:
        """Stop run ``tid`` of ``agent`` (default: its current run); returns the stopped run.

        A stopped run is marked (``runs.stopped``, put-if-absent) and its lease
        released, so it no longer counts as alive: the next takeover writes its
        handoff record at once, and if it was taken over already, the record is
        written now. Stopping a stopped run changes nothing.
        """
        validate_agent(agent)
        if tid is None:
            last = await self.store.last_seq(_stream(agent))
            info = await self._entry(agent, last) if last else None
            if info is None:
                raise NotFoundError(
                    f"agent {agent!r} has no runs to stop", code="run_not_found", agent=agent
                )
        else:
            info = (await self.attach(agent, tid)).info
        await self.store.insert(
            STOPPED,
            _run_key(agent, info.run),
            {"agent": agent, "run": info.run, "stoppedAt": format_datetime(self._clock.now())},
        )
        await self.store.release_lease(_lease(agent, info.run), info.run)
        successor = await self._successor(info)
        if successor is not None:
            await self._write_handoff(info, successor, "registry")
        return info

    async def attach(self, agent: str, tid: str) -> Run:
        """A handle on an existing run, e.g. from another process that knows its TID."""
        info = await self._run_info(validate_agent(agent), tid)
        if info is None:
            raise NotFoundError(
                f"agent {agent!r} has no run {tid!r}: list its runs with `runs list {agent}`",
                code="run_not_found",
            )
        return Run(self, info)

    # -- handoff records ------------------------------------------------------
    async def record_handoff(
        self, agent: str, record: Mapping[str, Any], rkey: str | None = None
    ) -> tuple[dict[str, Any], bool]:
        """Store a handoff record at most once; returns the record there and whether this landed it.

        The record must be valid against the lexicon, keyed by its ``toRun``,
        and describe a real takeover of this agent (``toRun`` took over from
        ``fromRun``); otherwise ``RecordValidationError`` names the field and
        nothing is stored.
        """
        validate_agent(agent)
        to_run = check_handoff_record(record, rkey)
        info = await self._run_info(agent, to_run)
        if info is None:
            raise InvalidInputError(
                f"record field 'toRun' ({to_run}) is not a run of agent {agent!r}",
                field="toRun",
            )
        if info.previous != record["fromRun"]:
            raise InvalidInputError(
                f"record field 'fromRun' ({record['fromRun']}) is not the run that "
                f"{to_run} took over from ({info.previous})",
                field="fromRun",
            )
        entry, created = await self._insert_handoff(agent, dict(record), "run")
        return entry.record, created

    async def _write_handoff(
        self, stopped: RunInfo, to_run: str, written_by: Literal["run", "registry"]
    ) -> HandoffEntry:
        existing = await self.store.get(HANDOFFS, f"{stopped.agent}/{to_run}")
        if existing is not None:
            return _entry_from_doc(stopped.agent, existing.value)
        record = build_handoff_record(
            from_run=stopped.run,
            to_run=to_run,
            created_at=self._clock.now(),
            generator=stopped.generator,
        )
        entry, _ = await self._insert_handoff(stopped.agent, record, written_by)
        return entry

    async def _insert_handoff(
        self, agent: str, record: dict[str, Any], written_by: Literal["run", "registry"]
    ) -> tuple[HandoffEntry, bool]:
        rkey = str(record["toRun"])
        value = {
            "agent": agent,
            "rkey": rkey,
            "record": record,
            "cid": record_cid(record),
            "writtenBy": written_by,
        }
        with tracing.span(
            "runs.write_handoff_record",
            {
                "agent_mem_vault.runs.agent": agent,
                "agent_mem_vault.runs.rkey": rkey,
                "agent_mem_vault.runs.from_run": str(record.get("fromRun")),
                "agent_mem_vault.runs.written_by": written_by,
            },
        ) as span:
            doc, created = await self.store.insert(HANDOFFS, f"{agent}/{rkey}", value)
            span.set_attribute("agent_mem_vault.runs.created", created)
        entry = _entry_from_doc(agent, doc.value)
        if created and self._on_handoff is not None:
            await self._notify(entry)
        return entry, created

    async def _notify(self, entry: HandoffEntry) -> None:
        # The record has landed, and a retry would find it and not call the
        # listener again: so a failing listener is logged, never raised as if
        # the write had failed. (The CLI's vault notes are re-synced from the
        # store on every command.)
        assert self._on_handoff is not None
        try:
            result = self._on_handoff(entry)
            if inspect.isawaitable(result):
                await result
        except Exception:
            _log.exception(
                "the on_handoff listener failed for the handoff record %s/%s; the record "
                "itself is stored",
                entry.agent,
                entry.rkey,
            )

    async def reap(self, agent: str) -> list[HandoffEntry]:
        """Write the handoff records that replaced runs owe but cannot write: their lease lapsed.

        A run that was taken over while alive and then died (or a run started
        from a shell that never heartbeats) would leave its takeover
        unacknowledged forever; once its lease is gone the registry writes the
        record for it. Returns the records written now.
        """
        written: list[HandoffEntry] = []
        for state in await self.list_runs(agent):
            if state.state == "taken_over" and not state.handoff_written and not state.alive:
                assert state.taken_over_by is not None
                written.append(
                    await self._write_handoff(state.info, state.taken_over_by, "registry")
                )
        return written

    async def reap_run(self, info: RunInfo) -> HandoffEntry | None:
        """:meth:`reap` for one run: its record, written now if it is owed and it cannot write it.

        Cheaper than ``reap`` when the caller knows which run to look at (``reap``
        reads the agent's whole run log). None while it is current or alive.
        """
        successor = await self._successor(info)
        if successor is None or await self.is_alive(info):
            return None
        return await self._write_handoff(info, successor, "registry")

    async def handoffs(self, agent: str) -> list[HandoffEntry]:
        """The agent's handoff records, in record-key (time) order."""
        validate_agent(agent)
        docs = await scan_all(self.store, HANDOFFS, prefix=f"{agent}/")
        return [_entry_from_doc(agent, d.value) for d in docs]

    # -- looking ---------------------------------------------------------------
    async def agents(self) -> list[str]:
        """Every agent that ever had a run, in name order."""
        return [d.key for d in await scan_all(self.store, AGENTS)]

    async def list_runs(self, agent: str) -> list[RunState]:
        """All runs of an agent, oldest first, with what became of each."""
        validate_agent(agent)
        records = await self.store.read(_stream(agent))
        written = {e.rkey for e in await self.handoffs(agent)}
        infos = [RunInfo.from_json(agent, r.seq, r.data) for r in records]
        out = []
        for i, info in enumerate(infos):
            lease = await self._own_lease(info)
            alive = lease is not None
            expires = lease.expires_at if lease else None
            if i + 1 < len(infos):
                by = infos[i + 1].run
                out.append(RunState(info, "taken_over", alive, expires, by, by in written))
            else:
                out.append(RunState(info, "current", alive, expires))
        return out

    async def status(self, agent: str) -> AgentStatus:
        """The agent's current run and liveness, and takeovers not yet acknowledged."""
        runs = await self.list_runs(agent)
        pending = [r.info.run for r in runs if r.state == "taken_over" and not r.handoff_written]
        return AgentStatus(
            agent=agent,
            current=runs[-1] if runs else None,
            runs=len(runs),
            handoffs=sum(1 for r in runs if r.handoff_written),
            pending=pending,
        )

    async def is_alive(self, info: RunInfo) -> bool:
        """Whether ``info``'s run still holds its lease and its process is not known dead."""
        return await self._own_lease(info) is not None

    async def is_stopped(self, info: RunInfo) -> bool:
        """Whether ``info``'s run was stopped on purpose (``stop_run``)."""
        return await self.store.get(STOPPED, _run_key(info.agent, info.run)) is not None

    # -- internals -------------------------------------------------------------
    async def _entry(self, agent: str, seq: int) -> RunInfo | None:
        records = await self.store.read(_stream(agent), after=seq - 1, limit=1)
        return RunInfo.from_json(agent, records[0].seq, records[0].data) if records else None

    async def _successor(self, info: RunInfo) -> str | None:
        nxt = await self._entry(info.agent, info.seq + 1)
        return nxt.run if nxt else None

    async def _run_info(self, agent: str, tid: str) -> RunInfo | None:
        doc = await self.store.get(RUNS, _run_key(agent, tid))
        if doc is not None:
            return await self._entry(agent, int(doc.value["seq"]))
        # The index entry is written just after the append; rebuild it if a
        # crash came in between.
        for rec in await self.store.read(_stream(agent)):
            if rec.data.get("run") == tid:
                await self.store.insert(
                    RUNS, _run_key(agent, tid), {"agent": agent, "seq": rec.seq}
                )
                return RunInfo.from_json(agent, rec.seq, rec.data)
        return None

    async def _own_lease(self, info: RunInfo) -> Lease | None:
        """The run's lease if the run itself still holds it (it is alive), else None.

        A run whose process is known dead holds nothing, whatever its lease says.
        """
        lease = await self.store.get_lease(_lease(info.agent, info.run))
        if lease is None or lease.owner != info.run or is_known_dead(info.process):
            return None
        return lease


def _lease_seconds(value: float) -> float:
    ttl = float(value)
    if not (math.isfinite(ttl) and ttl >= 0):
        raise InvalidInputError(
            f"lease_seconds must be a finite number of seconds, 0 or more, got {value!r}",
            field="lease_seconds",
        )
    return ttl


def _generator(value: Generator | Mapping[str, Any] | None) -> Generator:
    if value is None:
        return DEFAULT_GENERATOR
    if isinstance(value, Generator):
        return value
    try:
        return Generator.from_json(value)
    except KeyError as exc:
        raise InvalidInputError(
            f"generator needs {exc.args[0]!r}: give name and version (and optionally url)",
            field=f"generator.{exc.args[0]}",
        ) from None


def _entry_from_doc(agent: str, value: Mapping[str, Any]) -> HandoffEntry:
    written_by: Literal["run", "registry"] = (
        "registry" if value.get("writtenBy") == "registry" else "run"
    )
    return HandoffEntry(
        agent=agent,
        rkey=str(value["rkey"]),
        record=dict(value["record"]),
        cid=str(value["cid"]),
        written_by=written_by,
    )
