"""The SQLite store's writer: one thread that commits every write, in groups.

Writes run on a worker thread with their own connection: waiting for the file
lock (up to ``busy_timeout``) or for fsync then never stalls the event loop,
which may be serving other threads' events. Every write runs in ``BEGIN
IMMEDIATE`` so that its check (expected sequence, expected version, lease
holder) and its write happen under one database lock, across processes.

**Group commit.** Writes that arrive while the writer thread commits wait
and then go together: one transaction, one fsync, each write in its own
savepoint, so a write that fails (a conflict) undoes only itself (a write
alone in its batch needs no savepoint: its transaction is its own). Every write
is acknowledged only after the commit that holds it; with one writer at a
time nothing changes, and under concurrency a host commits many threads'
appends for the price of one.

Some errors end the whole transaction, not just the statement: a disk I/O
error, a full disk, a trigger that raises ``ROLLBACK``. A full disk is
``no_space`` wherever it is met (opening, writing, committing, reading). Then nothing of the
batch was committed, and no write can tell whether the error was its own, so
each write of the batch runs again alone, in a fresh transaction: it commits
at most once (the first attempt was rolled back), and a write that fails
alone gets the error, with what SQLite said. A failed ``COMMIT`` is never
retried: the commit may have reached the disk, so every write of the batch
fails with ``store_commit_failed`` and is never acknowledged.

**Closing.** ``close`` refuses new writes (``store_closed``), waits until the
writer thread has committed or failed every write already queued, then
closes the connection: no write is left waiting, none is acknowledged
without its commit.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from ..core.disk import result_code, roll_back_open, sqlite_failure
from ..core.errors import AgentMemVaultError, DataError, UnavailableError

__all__ = ["SqliteWriter", "is_busy"]

# How long the writer thread waits for a write before it ends (the next starts another).
_WRITER_IDLE_SECONDS = 30.0
T = TypeVar("T")


class SqliteWriter:
    """The writer connection of one store file, and the thread that writes with it."""

    def __init__(self, path: Path, conn: sqlite3.Connection, busy_timeout: float) -> None:
        self.path = path
        self._conn = conn
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        # Writes waiting for the writer thread: (body, future, its loop).
        self._queued: list[tuple[Callable[[sqlite3.Connection], Any], Any, Any]] = []
        self._queue_lock = threading.Lock()
        # The writer thread waits on this when nothing is queued: held, it blocks
        # the writer; a write releases it. A lock, not a ``Condition``: a
        # Condition's ``notify`` is Python code the event loop runs per write.
        self._wake = threading.Lock()
        self._wake.acquire()
        self._thread: threading.Thread | None = None
        self._writer_waits = False
        self._writing = False
        self._closed = False
        # close() calls waiting for the writer thread to go idle: (future, its loop).
        self._idle_waiters: list[tuple[Any, Any]] = []

    @property
    def closed(self) -> bool:
        """Whether ``close`` has begun: no write is taken any more."""
        return self._closed

    async def transact(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``body`` in a write transaction on the writer thread; see group commit above."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        with self._queue_lock:
            if self._closed:
                raise self.closed_error()
            self._queued.append((body, done, loop))
            self._writing = True
            thread = None
            if self._thread is None:
                thread = self._thread = threading.Thread(
                    target=self._write_queued, name=f"sqlite-writer {self.path.name}", daemon=True
                )
            elif self._writer_waits:
                self._signal_writer()
        if thread is not None:
            try:
                thread.start()
            except BaseException:  # no writer thread: nothing would ever settle the queue
                self._fail_queued()
                raise
        return await done

    def _write_queued(self) -> None:
        """The writer thread: commit what waits, batch by batch, for as long as it is used.

        One thread for the store's life, not one per burst of writes: starting
        a thread (or submitting to a pool) whenever the queue ran dry cost the
        event loop more than the write's own Python. It ends after
        ``_WRITER_IDLE_SECONDS`` without a write (a store left open costs no
        thread) and when the store closes; the next write starts another.
        """
        finished = False
        try:
            self._write_batches()
            finished = True
        finally:
            if not finished:  # an error of our own: fail what waits, let the next write start
                self._fail_queued()

    def _signal_writer(self) -> None:
        """Wake the writer thread that waits for a write (queue lock held)."""
        self._writer_waits = False
        self._wake.release()

    def _fail_queued(self) -> None:
        """Fail every write that waits, so that the next write starts a writer again."""
        with self._queue_lock:
            for _, done, loop in self._queued:
                with suppress(RuntimeError):
                    error = UnavailableError("the SQLite writer stopped; retry the write")
                    loop.call_soon_threadsafe(_settle, done, None, error)
            self._queued = []
            self._thread = None
            self._go_idle()

    def _go_idle(self) -> None:
        """Nothing is queued (queue lock held): wake the ``close`` calls waiting for that."""
        self._writing = False
        for done, loop in self._idle_waiters:
            with suppress(RuntimeError):  # that close's loop has gone
                loop.call_soon_threadsafe(_settle, done, None, None)
        self._idle_waiters = []

    def _next_batch(self) -> list[tuple[Callable[[sqlite3.Connection], Any], Any, Any]]:
        """What waits, once there is something; empty when the thread is to end."""
        with self._queue_lock:
            while not self._queued:
                if self._writing:
                    self._go_idle()
                if self._closed:
                    self._thread = None
                    return []
                self._writer_waits = True
                self._queue_lock.release()
                try:
                    woken = self._wake.acquire(timeout=_WRITER_IDLE_SECONDS)
                finally:
                    self._queue_lock.acquire()
                    if self._writer_waits:  # nobody signalled (a timeout, or an error)
                        self._writer_waits = False
                    elif not woken:  # signalled as the wait timed out: take the signal back
                        woken = self._wake.acquire(blocking=False)
                # The wake lock is held again: only a thread that waits is signalled.
                if not woken and not self._queued:
                    self._thread = None
                    return []
            batch, self._queued = self._queued, []
            return batch

    def _write_batches(self) -> None:
        while batch := self._next_batch():
            outcomes = self._commit_together(batch)
            if outcomes is None:  # SQLite ended the batch's transaction: each write alone
                outcomes = [o for write in batch for o in self._commit_together([write]) or ()]
            # One wake-up per caller's loop and batch, not one per write.
            by_loop: dict[Any, list[tuple[Any, Any, BaseException | None]]] = {}
            for done, loop, result, error in outcomes:
                by_loop.setdefault(loop, []).append((done, result, error))
            for loop, settled in by_loop.items():
                with suppress(RuntimeError):  # the caller's loop has closed
                    loop.call_soon_threadsafe(_settle_all, settled)

    def _commit_together(
        self, batch: list[tuple[Callable[[sqlite3.Connection], Any], Any, Any]]
    ) -> list[tuple[Any, Any, Any, BaseException | None]] | None:
        """Each write's outcome, after one transaction that holds the whole batch.

        ``None`` when SQLite ended the transaction under a batch of several
        writes: nothing of it was committed, and the caller runs each alone.
        """
        if len(batch) == 1:
            return [self._commit_alone(*batch[0])]
        outcomes: list[tuple[Any, Any, Any, BaseException | None]] = []
        try:
            with self.write() as conn:
                for body, done, loop in batch:
                    conn.execute("SAVEPOINT write")
                    try:
                        result = body(conn)
                    except Exception as exc:
                        if not conn.in_transaction:  # rolled back whole, the savepoint with it
                            raise _TransactionEndedError from exc
                        conn.execute("ROLLBACK TO write")
                        conn.execute("RELEASE write")
                        outcomes.append((done, loop, None, self._write_error(exc, False)))
                    else:
                        conn.execute("RELEASE write")
                        outcomes.append((done, loop, result, None))
        except _TransactionEndedError as ended:
            if len(batch) > 1:
                return None
            error = self._write_error(ended.__cause__ or ended, True)
            return [(done, loop, None, error) for _, done, loop in batch]
        except BaseException as exc:  # the transaction failed as a whole; nothing acknowledged
            error = self._write_error(exc, True)
            return [(done, loop, None, error) for _, done, loop in batch]
        return outcomes

    def _commit_alone(
        self, body: Callable[[sqlite3.Connection], Any], done: Any, loop: Any
    ) -> tuple[Any, Any, Any, BaseException | None]:
        """One write in its own transaction, without a savepoint: its error undoes all of it."""
        ended = True  # unless the body's own error left the transaction open
        try:
            with self.write() as conn:
                try:
                    result = body(conn)
                except Exception:
                    ended = not conn.in_transaction
                    raise
        except BaseException as exc:
            return done, loop, None, self._write_error(exc, ended)
        return done, loop, result, None

    def _write_error(self, exc: BaseException, ended: bool) -> BaseException:
        """What a write's caller gets for ``exc``: the package's errors pass unchanged.

        A SQLite error becomes one that names the file and what SQLite said;
        ``ended`` says SQLite rolled the whole transaction back.
        """
        if not isinstance(exc, sqlite3.Error):
            return exc
        undone = "SQLite rolled back the transaction" if ended else "the write was undone"
        if sqlite_failure(exc, self.path).code == "no_space":
            error: AgentMemVaultError = UnavailableError(
                f"could not write to {self.path}: the database or its disk is full ({exc}); "
                f"{undone}, so nothing of this write was saved — free space, then retry",
                code="no_space",
            )
        else:
            error = DataError(
                f"could not write to {self.path}: {exc}; {undone}, so nothing of this write "
                "was saved — check the disk and the file (triggers, permissions), then retry",
                code="store_write_failed",
            )
        error.__cause__ = exc
        return error

    def closed_error(self) -> UnavailableError:
        return UnavailableError(
            f"the store {self.path} is closed; open it again to use it", code="store_closed"
        )

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction under the database's write lock."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if is_busy(exc):
                    raise UnavailableError(
                        f"the database {self.path} stayed locked for more than "
                        f"{self._busy_timeout:g}s; another process holds it — retry",
                        code="lock_timeout",
                    ) from exc
                raise
            try:
                yield self._conn
            except BaseException:
                roll_back_open(self._conn)
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                roll_back_open(self._conn)
                raise self._commit_error(exc) from exc

    def _commit_error(self, exc: sqlite3.Error) -> AgentMemVaultError:
        """What every write of a batch gets when its COMMIT fails.

        ``SQLITE_FULL``: the log's commit frame could not be written, so nothing of
        the batch is on disk (``no_space``, retry). Any other error may have come
        after the commit reached the disk (a failed fsync, a shared-memory file
        that could not grow): ``no_space`` if the disk is full, else
        ``store_commit_failed``, and either way "may or may not be on disk".
        """
        maybe = (
            "the write was not acknowledged and may or may not be on disk — read it back "
            "before writing it again"
        )
        if result_code(exc) == sqlite3.SQLITE_FULL:
            return UnavailableError(
                f"could not commit to {self.path}: the disk holding it is full ({exc}); "
                "nothing of this write was saved — free space, then retry",
                code="no_space",
            )
        if sqlite_failure(exc, self.path).code == "no_space":
            return UnavailableError(
                f"could not commit to {self.path}: the disk holding it is full ({exc}); "
                f"{maybe}, once space is freed",
                code="no_space",
            )
        return DataError(
            f"could not commit to {self.path}: {exc}; {maybe}", code="store_commit_failed"
        )

    async def close(self) -> None:
        """Refuse new writes, let every queued write commit (or fail), then close the connection.

        Safe to call from any thread's loop while others write; a second call
        is harmless.
        """
        loop = asyncio.get_running_loop()
        idle: asyncio.Future[None] = loop.create_future()
        with self._queue_lock:
            self._closed = True
            if self._writer_waits:
                self._signal_writer()  # its thread ends; nothing is queued
            if self._writing:
                self._idle_waiters.append((idle, loop))
            else:
                idle.set_result(None)
        await idle
        # The writer thread is idle and no write can start again: nothing
        # waits for this lock.
        with self._lock:
            self._conn.close()


class _TransactionEndedError(Exception):
    """SQLite rolled back the whole transaction under a write (its cause says why)."""


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.done():
        return  # the caller was cancelled; the write stands, as a commit does
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


def _settle_all(settled: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for done, result, error in settled:
        _settle(done, result, error)


def is_busy(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc)
    )
