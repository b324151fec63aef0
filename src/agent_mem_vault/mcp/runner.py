"""How the MCP server runs vault calls: on the event loop when it can, in one worker when not.

A vault call runs on the event loop itself when the server's one worker thread
is idle: it is short, and the two thread hand-offs would cost it more than its
own work on a busy machine. A write may wait up to the lock timeout for the
vault's file lock (another process may hold it), which must not stall the loop:
it runs here only if the lock can be had at once (``Vault.at_once``), and
otherwise, untouched, goes to the worker, which waits. Either way one vault
call runs at a time, and each call sees every write sent before it. A search
that may run an embedding model (loaded at its first use, then embedding the
query) always runs in the worker, so the server keeps answering meanwhile. A call
the client cancels while it waits for the worker or for the lock is never run
(``Vault.in_turn``): a write given up on is not written later behind the
client's back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.types import CallToolResult, TextContent

from ..core.errors import InvalidInputError
from ..vault.folder.files import CallCancelled, LockBusy
from .settings import ServerSettings

if TYPE_CHECKING:
    from ..vault import Vault

__all__ = ["Runner"]

T = TypeVar("T")


class Runner:
    """Runs vault calls and renders their values as tool results.

    While the worker thread is busy every call goes there, behind the calls sent
    before it, so it sees them. When it is idle a read runs here on the loop,
    which nothing else uses meanwhile, and so does a write that gets the vault's
    locks without waiting; a write that would wait goes to the worker.
    """

    def __init__(self, vault: Vault, settings: ServerSettings) -> None:
        self.vault = vault
        self.settings = settings
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vault")
        self._queued = 0  # calls given to the worker and not yet finished

    def namespace(self, given: str | None) -> str:
        if given:
            return given
        if self.settings.namespace:
            return self.settings.namespace
        raise InvalidInputError(
            "namespace is required: this server has no default namespace; pass one such as "
            "project/harbor-api, or start the server inside a git repository",
            field="namespace",
        )

    async def call(
        self,
        fn: Callable[[], T],
        render: Callable[[T], tuple[str, dict[str, Any]]],
        *,
        read_only: bool = False,
        slow: bool = False,
    ) -> CallToolResult:
        value = await self.value(fn, read_only=read_only, slow=slow)
        text, content = render(value)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=content
        )

    async def value(self, fn: Callable[[], T], *, read_only: bool = False, slow: bool = False) -> T:
        """The raw value (for resources and prompts too); errors propagate.

        ``slow``: a read that may take long (a search that may run an embedding
        model) always runs in the worker, so the loop keeps answering meanwhile.

        A call given to the worker and then cancelled by the client (a
        ``notifications/cancelled``, or an HTTP client that went away) before it
        began is never run: a write waiting for another process's lock is not
        written when the lock frees. A call already running finishes (what a
        write wrote stays) and its answer is dropped.
        """
        if self._queued == 0 and not slow:
            if read_only:
                return fn()
            try:
                return self.vault.at_once(fn)
            except LockBusy:
                pass  # not to be had at once, and nothing done: the worker waits for it
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[T] = loop.create_future()
        self._queued += 1
        done = functools.partial(self._finished, answer)
        call = _WorkerCall()
        if read_only:
            job: Callable[[], T] = functools.partial(call.read, fn)
        else:
            job = functools.partial(self.vault.in_turn, fn, call.given_up)
        # One wake-up of the loop per call, as ``run_in_executor`` costs: the count
        # goes down where the answer is delivered, so a read never starts while
        # the worker runs.
        self._pool.submit(job).add_done_callback(
            lambda future: _call_soon_threadsafe(loop, done, future)
        )
        try:
            return await answer
        except asyncio.CancelledError:
            call.wanted = False
            raise

    def _finished(self, answer: asyncio.Future[T], future: Future[T]) -> None:
        self._queued -= 1
        if answer.cancelled():
            return
        error = future.exception()
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(future.result())


class _WorkerCall:
    """One call handed to the worker, and whether its client still waits for it."""

    def __init__(self) -> None:
        self.wanted = True

    def given_up(self) -> bool:
        return not self.wanted

    def read(self, fn: Callable[[], T]) -> T:
        """``fn()``, unless the client gave up on the call before the worker came to it."""
        if not self.wanted:
            raise CallCancelled
        return fn()


def _call_soon_threadsafe(
    loop: asyncio.AbstractEventLoop, fn: Callable[..., object], *args: Any
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits for the answer
        loop.call_soon_threadsafe(fn, *args)
