"""stdin and stdout served by the event loop itself, no worker thread.

The SDK's stdio transport reads each line and writes each answer through
worker threads: two thread hand-offs per call, each a wake-up that waits for a
core on a busy machine. Here the loop watches stdin (``add_reader``), parses
each line where it arrives and writes each answer at once (a non-blocking
write; what the pipe cannot take yet waits for ``add_writer``). What the SDK's
transport does besides is kept:

- each line is read as the SDK reads it: UTF-8 with undecodable bytes
  replaced, ``\\n``, ``\\r\\n`` and ``\\r`` each ending a line, validated as a
  JSON-RPC message by the SDK's own adapter; a line that is none (or that the
  adapter would misread, see :mod:`.wire`) is answered at once;
- answers are serialised as the SDK serialises them, one line each, in order;
- while serving, fd 0 reads the null device and fd 1 goes to stderr, so a
  stray ``print`` cannot corrupt the wire; both are put back at the end.

:meth:`LoopStdio.claim` returns None where the loop cannot watch stdin (a
regular file, the null device), or stdout is neither a pipe, a socket nor a
terminal: the SDK's transport serves those.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = ["LoopStdio"]

_READ_SIZE = 1 << 18
# Messages parsed but not yet taken by the server; past this, stdin is not read
# until the server catches up (a client cannot make the queue grow without end).
_QUEUE_HIGH = 64
_QUEUE_LOW = 16


def _watchable_input(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _writable_output(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def _backed_by(stream: Any, fd: int) -> bool:
    try:
        return bool(stream.fileno() == fd)
    except (AttributeError, OSError, ValueError):
        return False


@dataclass(slots=True)
class _Watch:
    """The loop watching one fd for a stream, switched on and off as the stream needs:
    added once however often it is started, and a loop that closed or never watched
    the fd is fine to stop."""

    add: Callable[[int, Callable[[], None]], object]
    remove: Callable[[int], object]
    fd: int
    callback: Callable[[], None]
    on: bool

    def start(self) -> None:
        if not self.on:
            self.on = True
            self.add(self.fd, self.callback)

    def stop(self) -> None:
        if self.on:
            self.on = False
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                self.remove(self.fd)


class _Stream:
    """What the read and the write stream share: ``async with`` closes them."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class LoopStdio:
    """This process's stdin and stdout as the SDK's read and write streams."""

    def __init__(self, loop: asyncio.AbstractEventLoop, in_fd: int, out_fd: int) -> None:
        self.loop = loop
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.outgoing = _Outgoing(self)
        self.incoming = _Incoming(self)
        self._out_flags: int | None = None

    @classmethod
    def claim(cls) -> LoopStdio | None:
        """Take fds 0 and 1 for the loop; None when the SDK's transport must serve them."""
        try:
            if not (_backed_by(sys.stdin, 0) and _backed_by(sys.stdout, 1)):
                return None
            if not (_watchable_input(0) and _writable_output(1)):
                return None
        except OSError:
            return None
        loop = asyncio.get_running_loop()
        in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        try:
            out_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
        except OSError:
            os.close(in_fd)
            return None
        pipes = cls(loop, in_fd, out_fd)
        try:
            loop.add_reader(in_fd, pipes.incoming.on_readable)
        except (OSError, ValueError):  # epoll refuses it (EPERM): not something it can watch
            os.close(in_fd)
            os.close(out_fd)
            return None
        with contextlib.suppress(OSError):  # the writes stay blocking
            pipes._non_blocking_output()
        pipes._divert()
        return pipes

    def _non_blocking_output(self) -> None:
        """Writes that never wait, for a pipe or socket stdout that is not stderr too.

        The flag belongs to the open file, shared by every descriptor duplicated
        from it: where stderr is the same open file (``2>&1``), its writes would
        start failing with EAGAIN, so there the writes stay blocking. A terminal
        stays blocking as well (the shell shares it, and it cannot stall).
        """
        fd = self.out_fd
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            return
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        if flags & os.O_NONBLOCK:
            return
        try:
            err_before = fcntl.fcntl(2, fcntl.F_GETFL)
        except OSError:
            err_before = None
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        self._out_flags = flags
        with contextlib.suppress(OSError):
            if err_before is not None and fcntl.fcntl(2, fcntl.F_GETFL) != err_before:
                self._restore_flags()

    def _restore_flags(self) -> None:
        if self._out_flags is not None:
            with contextlib.suppress(OSError):
                fcntl.fcntl(self.out_fd, fcntl.F_SETFL, self._out_flags)
            self._out_flags = None

    def _divert(self) -> None:
        """fd 0 reads the null device, fd 1 writes to stderr, as under the SDK's transport."""
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr: stray output goes nowhere rather than onto the wire
            with contextlib.suppress(OSError):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.close(null)

    def release(self) -> None:
        """Stop watching, and put fds 0 and 1 back as they were."""
        self.incoming.stop()
        self.outgoing.stop()
        self._restore_flags()
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        for fd, private in ((0, self.in_fd), (1, self.out_fd)):
            with contextlib.suppress(OSError):
                os.dup2(private, fd)
            with contextlib.suppress(OSError):
                os.close(private)

    def parse(self, line: bytes) -> SessionMessage | None:
        """``line`` as the SDK's transport reads it; one :mod:`.wire` refuses is answered here."""
        from mcp.shared.message import SessionMessage
        from mcp.types import JSONRPCError

        from .wire import read_message

        message = read_message(line)
        if isinstance(message, JSONRPCError):
            # The SDK's transport decodes with undecodable bytes replaced and keeps
            # the line's newline: the same text gives the same message or error.
            message = read_message(line.decode("utf-8", errors="replace") + "\n")
        if isinstance(message, JSONRPCError):
            self.outgoing.write_message(SessionMessage(message))
            return None
        return SessionMessage(message)


class _Incoming(_Stream):
    """The read stream: lines parsed as they arrive, handed out in order."""

    def __init__(self, pipes: LoopStdio) -> None:
        self._pipes = pipes
        self._queue: collections.deque[SessionMessage] = collections.deque()
        self._partial = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        # LoopStdio.claim adds the reader before anything can be read.
        loop = pipes.loop
        self._reader = _Watch(
            loop.add_reader, loop.remove_reader, pipes.in_fd, self.on_readable, on=True
        )
        self._ended = False
        self._closed = False

    def on_readable(self) -> None:
        try:
            data = os.read(self._pipes.in_fd, _READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""  # a stdin that fails to read ends the connection as EOF does
        if not data:
            self._end_of_input()
            return
        start = 0
        find = data.find
        while (newline := find(b"\n", start)) >= 0:
            if self._partial:
                self._partial += data[start:newline]
                line = bytes(self._partial)
                self._partial.clear()
            else:
                line = data[start:newline]
            self._line(line)
            start = newline + 1
        if start < len(data):
            self._partial += data[start:]
        if len(self._queue) >= _QUEUE_HIGH:
            self.stop()
        self._wake()

    def _line(self, line: bytes) -> None:
        if b"\r" in line:  # a lone CR ends a line too; CR LF ends one
            parts = line.split(b"\r")
            if not parts[-1]:
                parts.pop()
            for part in parts:
                self._message(part)
        else:
            self._message(line)

    def _message(self, line: bytes) -> None:
        message = self._pipes.parse(line)
        if message is not None:
            self._queue.append(message)

    def _end_of_input(self) -> None:
        if self._partial:
            line = bytes(self._partial)
            self._partial.clear()
            self._line(line)
        self.end()

    def end(self) -> None:
        """No more input: stdin closed, or nothing can be written back any more."""
        self._ended = True
        self.stop()
        self._wake()

    def stop(self) -> None:
        """Stop reading stdin: at the end, or while the server catches up (``_resume``)."""
        self._reader.stop()

    def _resume(self) -> None:
        # On every message taken: while stdin is read (nearly always) it costs one look.
        if not self._reader.on and not self._ended and not self._closed:
            self._reader.start()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def receive(self) -> SessionMessage:
        while not self._queue:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended:
                raise anyio.EndOfStream
            self._waiter = self._pipes.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        message = self._queue.popleft()
        if len(self._queue) <= _QUEUE_LOW:
            self._resume()
        return message

    def __aiter__(self) -> _Incoming:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._closed = True
        self.stop()
        self._wake()


class _Outgoing(_Stream):
    """The write stream: each message written at once, in order; what waits is kept."""

    def __init__(self, pipes: LoopStdio) -> None:
        self._pipes = pipes
        self._backlog: collections.deque[memoryview] = collections.deque()
        self._waiters: list[asyncio.Future[None]] = []
        loop = pipes.loop
        self._writer = _Watch(
            loop.add_writer, loop.remove_writer, pipes.out_fd, self._on_writable, on=False
        )
        self._broken = False
        self._closed = False

    def write_message(self, item: SessionMessage) -> None:
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        self._write(data.encode())

    def _write(self, data: bytes) -> None:
        if self._broken:
            return
        if self._backlog:
            self._backlog.append(memoryview(data))
            return
        try:
            written = os.write(self._pipes.out_fd, data)
        except (BlockingIOError, InterruptedError):
            written = 0
        except OSError:  # EPIPE: the client closed its end; nothing can reach it
            self._break()
            return
        if written < len(data):
            self._backlog.append(memoryview(data)[written:])
            self._writer.start()

    def _on_writable(self) -> None:
        backlog = self._backlog
        while backlog:
            chunk = backlog[0]
            try:
                written = os.write(self._pipes.out_fd, chunk)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._break()
                return
            if written < len(chunk):
                backlog[0] = chunk[written:]
                return
            backlog.popleft()
        self._writer.stop()
        self._wake()

    def _break(self) -> None:
        """stdout is gone: drop what waits, and end the connection as EOF on stdin would."""
        self._broken = True
        self._backlog.clear()
        self._writer.stop()
        self._wake()
        self._pipes.incoming.end()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def stop(self) -> None:
        self._writer.stop()

    async def drained(self) -> None:
        """Until every message written so far has left (or stdout is gone)."""
        while self._backlog and not self._broken:
            waiter = self._pipes.loop.create_future()
            self._waiters.append(waiter)
            await waiter

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        self.write_message(item)
        # Like the SDK's transport, a sender waits while the client does not read.
        await self.drained()

    async def aclose(self) -> None:
        self._closed = True
