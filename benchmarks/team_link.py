"""The link between ``bench_team.py``'s machines and their remote: a relay on loopback
that can delay, fall silent or go away, and the test for ``tc netem``.

    python benchmarks/team_link.py TARGET_PORT DELAY_MS    # prints the port it listens on

The relay forwards each connection to ``git daemon`` on ``TARGET_PORT`` and holds
every chunk it forwards ``DELAY_MS`` milliseconds, in each direction, before
passing it on: with 25 ms a round trip takes 50 ms more, as on a link with that
delay (chunks keep their order and are not held back by each other, so the
relay adds latency, not a limit on throughput). ``SIGUSR1`` makes it silent: the
connections it carries are dropped, and it then accepts connections and never
answers them, as a remote behind a dead route does. Ended, its port refuses.

The kernel's own delay, ``tc qdisc … netem`` on the loopback of a network
namespace of its own, is the better tool: it delays packets, not chunks, and
costs no process in between. :func:`netem_works` says whether this machine has
it; ``bench_team.py`` uses it when it does and this relay when it does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys

NETEM = "ip link set lo up && tc qdisc add dev lo root netem delay {ms}ms"
"""What makes the loopback of a network namespace delay each packet by ``ms``."""
UNSHARE = (["unshare", "--net"], ["unshare", "--map-root-user", "--net"])
"""Ways to get a network namespace: as root, and as a user with user namespaces."""
CHUNK = 65536


def netem_works(ms: int) -> list[str] | None:
    """The ``unshare`` command under which ``NETEM`` works here, or None (no
    ``unshare`` or ``tc``, no right to make a namespace, a kernel without
    ``sch_netem``)."""
    for unshare in UNSHARE:
        try:
            tried = subprocess.run(
                [*unshare, "sh", "-c", NETEM.format(ms=ms)],
                capture_output=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if tried.returncode == 0:
            return unshare
    return None


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay`` seconds after it arrived."""
    loop = asyncio.get_running_loop()
    held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            due, data = await held.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(send())
    try:
        while data := await reader.read(CHUNK):
            held.put_nowait((loop.time() + delay, data))
    finally:
        held.put_nowait((loop.time() + delay, b""))
        await sender


class Relay:
    """The relay's connections and its state: forwarding, or silent."""

    def __init__(self, target: int, delay: float) -> None:
        self.target = target
        self.delay = delay
        self.silent = False
        self.open: set[asyncio.StreamWriter] = set()

    def fall_silent(self) -> None:
        self.silent = True
        for writer in self.open:
            writer.transport.abort()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open.add(writer)
        try:
            if self.silent:
                await asyncio.Event().wait()  # accepted, never answered
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
            self.open.add(up_writer)
            try:
                await asyncio.gather(
                    _pump(reader, up_writer, self.delay), _pump(up_reader, writer, self.delay)
                )
            finally:
                self.open.discard(up_writer)
                up_writer.close()
        except (OSError, asyncio.IncompleteReadError):
            pass  # either end went away: so does the connection
        finally:
            self.open.discard(writer)
            writer.close()


async def serve(target: int, delay: float) -> None:
    relay = Relay(target, delay)
    server = await asyncio.start_server(relay.handle, "127.0.0.1", 0)
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, relay.fall_silent)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(int(argv[0]), float(argv[1]) / 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
