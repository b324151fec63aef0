"""The harness service as the HTTP routes call it: harness keys, users, one call each.

This module is the seam between the wire (pydantic bodies, string ids) and
the harness service (``HarnessHost`` and its sessions). It holds no state of
its own: every call opens the session it needs from the host, so any number
of app processes can serve the same persistence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import InvalidInputError, UnauthenticatedError
from . import schemas as s
from .errors import BadEventIdError, UnknownHarnessError

__all__ = ["HANDED_TO_PERSON", "HELD_FOR_PERSON", "HarnessService"]

HANDED_TO_PERSON = (
    "You are handed to a person from the team, who will answer in this conversation; "
    "messages you send meanwhile are kept for them."
)
"""``message`` of an ``interrupted`` turn: the customer's reply says a person takes over,
whatever the model wrote (often nothing)."""

HELD_FOR_PERSON = (
    "Your message is kept for the person from the team who has this conversation; "
    "no agent answers until they hand it back."
)
"""``message`` of a ``held`` turn: a message sent while a person has the thread."""

_STATUS_MESSAGES = {"interrupted": HANDED_TO_PERSON, "held": HELD_FOR_PERSON}


class HarnessService:
    """Routes' view of a host and the harnesses an app serves, by URL key."""

    def __init__(self, host: Any, harnesses: Mapping[str, Any] | Sequence[Any]) -> None:
        self.host = host
        self._by_key: dict[str, Any] = {}
        items = (
            list(harnesses.items())
            if isinstance(harnesses, Mapping)
            else [(h.name.rsplit("/", 1)[-1], h) for h in harnesses]
        )
        if not items:
            raise InvalidInputError("create_harness_app needs at least one harness")
        for key, harness in items:
            if not key or not all(c.isalnum() or c in "._-" for c in key):
                raise InvalidInputError(
                    f"harness key {key!r} is not URL-safe: use letters, digits, '.', '_', '-'"
                )
            if key in self._by_key:
                raise InvalidInputError(
                    f"two harnesses have the key {key!r}; pass a mapping {{key: harness}}"
                )
            self._by_key[key] = harness

    # -- harnesses ---------------------------------------------------------
    def keys(self) -> list[str]:
        return list(self._by_key)

    def harness(self, key: str) -> Any:
        try:
            return self._by_key[key]
        except KeyError:
            raise UnknownHarnessError(
                f"this app serves no harness {key!r}; it serves {', '.join(self._by_key)}",
                harness=key,
            ) from None

    def harness_infos(self) -> list[s.HarnessInfo]:
        infos = []
        for key, harness in self._by_key.items():
            routing = harness.routing
            infos.append(
                s.HarnessInfo(
                    key=key,
                    name=harness.name,
                    agents=[a.name for a in harness.agents],
                    allowHandoffToHuman=bool(routing and routing.allow_handoff_to_human),
                )
            )
        return infos

    # -- users -------------------------------------------------------------
    async def user_of(self, request: Any, *, required: bool = True) -> Any:
        """The user of ``request`` per the host's access; 401 when access finds none.

        With ``required=False`` (``/api/me``) a request that sends no
        ``Authorization`` header is anonymous (None); one that sends
        credentials matching no user is still a 401, so a wrong or expired
        token is never mistaken for "not signed in".
        """
        if self.host.access is None:
            return None  # no access configured: everyone may do everything
        user = await self.host.get_user_of_request(request)
        if user is not None:
            return user
        if request.headers.get("authorization"):
            raise UnauthenticatedError(
                "the credentials in the Authorization header match no user: "
                "sign in again for a valid token"
            )
        if required:
            raise UnauthenticatedError(
                "no user for this request: send the Authorization header your login gives you"
            )
        return None

    @staticmethod
    def render_user(user: Any) -> s.UserBody:
        if user is None:
            return s.UserBody(id=None, tenantId=None)
        return s.UserBody(id=user.id, tenantId=getattr(user, "tenant_id", None))

    # -- sessions ----------------------------------------------------------
    async def open_existing(self, key: str, thread_id: str, user: Any) -> Any:
        """Open a thread that must exist already (everything but a user's message).

        Only a user's message starts a thread: a read, an answer, a share, a
        stream or an operator reply to an unknown thread is a 404 and writes
        nothing. Opening checks the ``read`` action and the thread's harness.
        """
        return await self.host.open(self.harness(key), thread_id=thread_id, user=user, create=False)

    async def snapshot(self, key: str, thread_id: str, user: Any) -> s.SnapshotBody:
        session = await self.open_existing(key, thread_id, user)
        return self.render_snapshot(key, thread_id, await session.snapshot())

    def render_snapshot(self, key: str, thread_id: str, snap: Any) -> s.SnapshotBody:
        return s.SnapshotBody(
            threadId=thread_id,
            harness=key,
            messages=[s.MessageBody.model_validate(m.to_json()) for m in snap.messages],
            activeAgent=snap.active_agent,
            pendingWaits=[
                s.WaitBody(waitId=w.wait_id, kind=w.kind, message=w.message)
                for w in snap.pending_waits
            ],
            status=snap.status,
            metadata=dict(snap.metadata),
            lastEventId=str(snap.seq),
        )

    async def send(self, key: str, thread_id: str, user: Any, body: s.SendBody) -> s.TurnResultBody:
        from ..harness.messages import FilePart

        harness = self.harness(key)
        files = tuple(
            FilePart(media_type=f.media_type, data=f.data, url=f.url, name=f.name)
            for f in body.files
        )
        # An operator replies in a thread that waits for a person; it never starts one.
        result = await self.host.send(
            harness,
            body.text,
            thread_id=thread_id,
            user=user,
            as_=body.as_,
            files=files,
            input_id=body.input_id,
        )
        return self.render_turn(result)

    @staticmethod
    def render_turn(result: Any) -> s.TurnResultBody:
        return s.TurnResultBody(
            text=result.text or "",
            status=result.status,
            runId=result.run_id,
            inputId=result.input_id,
            code=result.code,
            message=result.message or _STATUS_MESSAGES.get(result.status),
        )

    async def answer(
        self, key: str, thread_id: str, user: Any, question_id: str, value: Any
    ) -> None:
        session = await self.open_existing(key, thread_id, user)
        await session.answer(question_id=question_id, value=value)

    async def end_wait(self, key: str, thread_id: str, user: Any, wait_id: str, how: str) -> None:
        session = await self.open_existing(key, thread_id, user)
        if how == "resolve":
            await session.resolve(wait_id)
        else:
            await session.cancel(wait_id)

    async def continue_without_message(
        self, key: str, thread_id: str, user: Any, input_id: str | None
    ) -> s.TurnResultBody:
        session = await self.open_existing(key, thread_id, user)
        return self.render_turn(await session.continue_without_message(input_id=input_id))

    async def share(self, key: str, thread_id: str, user: Any, member: str, role: str) -> None:
        # Through this harness's URL only its own threads: another's is 409 wrong_harness.
        await self.open_existing(key, thread_id, user)
        await self.host.sessions.share(thread_id=thread_id, user_id=member, role=role, user=user)

    async def transfer(
        self, key: str, thread_id: str, user: Any, body: s.TransferBody
    ) -> s.TransferResultBody:
        from ..harness.transfer import Endpoint, Envelope

        source = self.harness(key)
        target = self.harness(body.to)
        result = await self.host.transfer(
            from_=Endpoint(source, thread_id),
            to=Endpoint(target, body.thread_id),
            envelope=Envelope(note=body.note, messages=body.messages),
            user=user,
            transfer_id=body.transfer_id,
        )
        return s.TransferResultBody(threadId=result.thread_id, harness=body.to)

    async def waiting(self, key: str, user: Any) -> list[s.WaitingThreadBody]:
        """Threads of harness ``key`` that wait for a person and that ``user`` may answer."""
        harness = self.harness(key)
        access = self.host.access
        rows = []
        for summary in await self.host.sessions.list(
            user=user, harness=harness.name, waiting_for_human=True
        ):
            role = summary.entry.members.get(user.id) if user is not None else None
            if access is not None and not access.rules.allows(role, "operator"):
                continue  # the user who waits sees the thread, but is not its person
            session = await self.open_existing(key, summary.thread_id, user)
            snap = await session.snapshot()
            for wait in snap.pending_waits:
                if wait.kind == "human":
                    rows.append(
                        s.WaitingThreadBody(
                            threadId=summary.thread_id,
                            harness=key,
                            waitId=wait.wait_id,
                            message=wait.message,
                            activeAgent=snap.active_agent,
                        )
                    )
        return rows

    # -- events ------------------------------------------------------------
    async def open_for_events(
        self, key: str, thread_id: str, user: Any, raw_after: str | None
    ) -> tuple[Any, int]:
        """Open the session to stream and check ``raw_after`` before the stream starts.

        Access and the event id are checked here, while an error can still be a
        4xx answer: once the SSE response has begun, its status is sent.
        """
        session = await self.open_existing(key, thread_id, user)
        if not raw_after:
            return session, 0  # a fresh stream: no id to check, so no read of the log
        snap = await session.snapshot()
        return session, parse_event_id(raw_after, snap.seq)


def parse_event_id(raw: str | None, newest: int) -> int:
    """Event ids are the log's sequence numbers (up to ``newest``); else ``bad_event_id``."""
    if raw is None or raw == "":
        return 0
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18 or int(raw) > newest:
        raise BadEventIdError(
            f"event id {raw[:40]!r} is not an id of this stream (ids are the numbers sent as "
            f"`id:`, up to {newest} now); resume with the last one you received",
            lastEventId=raw[:40],
        )
    return int(raw)
