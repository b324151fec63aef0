"""Publishing records to an AT Protocol repository (a PDS) over XRPC.

Writing a record with a fixed key is not idempotent on the wire: a second
``createRecord`` with the same key fails (the reference PDS answers 500, not a
conflict code), and a timeout leaves us not knowing whether the first one
landed. So after *any* failure :meth:`PdsClient.publish` reads the record
back with ``getRecord`` and decides by content:

* the same record is there → ``already_published`` (acknowledged by us earlier);
* a different record is there → ``taken`` (another run acknowledged this key first);
* nothing is there → :class:`PublishFailed` (nothing landed: retry).

``putRecord`` with ``swapRecord: null`` ("only if absent") is the other way
to write; the reference PDS answers 400 ``InvalidSwap`` when a different
record is there and 200 without a commit when the identical one is. Records
are sent without ``validate`` by default, so that the PDS does not need our lexicon
(it answers ``validationStatus: "unknown"``); ``validate=True`` asks it to check
the record, which fails on a PDS that does not know the lexicon.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from ..core.errors import RemoteError, UnauthenticatedError
from .cbor import record_cid
from .lexicon import validate_record

__all__ = ["PdsClient", "PdsSession", "PublishFailed", "PublishResult", "XrpcError"]

Outcome = Literal["created", "already_published", "taken"]


class XrpcError(RemoteError, code="xrpc_error"):
    """The PDS answered an XRPC call with an error status."""

    def __init__(self, method: str, status: int, error: str | None, message: str | None) -> None:
        super().__init__(
            f"{method} failed with HTTP {status}"
            + (f" {error}" if error else "")
            + (f": {message}" if message else ""),
            method=method,
            status=status,
            error=error,
        )
        self.method = method
        self.status = status
        self.error = error


class PublishFailed(RemoteError, code="publish_failed"):
    """The record is not in the repository after a failed write: publishing again is safe.

    ``retryable`` says whether publishing again can help as things stand: False
    when the PDS refused the write itself (a 4xx such as an expired session or
    a record it will not take), True for a network failure, a timeout or a
    server error.
    """

    def __init__(self, message: str, *, retryable: bool, **details: Any) -> None:
        super().__init__(message, retryable=retryable, **details)
        self.retryable = retryable


@dataclass(frozen=True, slots=True)
class PdsSession:
    """A logged-in session: whose repository (``did``) and the access token."""

    did: str
    handle: str
    access_jwt: str


@dataclass(frozen=True, slots=True)
class PublishResult:
    """What happened to one record, and what is in the repository now."""

    outcome: Outcome
    """``created`` now, ``already_published`` earlier by us, or ``taken`` by another writer."""
    uri: str
    cid: str
    """CID of the record that is in the repository (ours unless ``taken``)."""
    record: dict[str, Any]
    """The record that is in the repository under this key."""
    validation_status: str | None = None
    """The PDS's ``validationStatus`` for a write now: ``valid`` (checked against the
    lexicon), ``unknown`` (stored unchecked: the PDS does not know the lexicon), or None
    when nothing was written now."""
    ours: str | None = None
    """CID of our record (differs from ``cid`` when ``taken``)."""


class PdsClient:
    """A small async XRPC client for one PDS.

    >>> async def publish(record, rkey):  # doctest: +SKIP
    ...     async with PdsClient("https://pds.example") as pds:
    ...         await pds.login("alice.example", "app-password")
    ...         return await pds.publish(record, rkey)
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 15.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout, transport=transport)
        self.session: PdsSession | None = None

    def _what(self, exc: httpx.HTTPError) -> str:
        """What went wrong on the network, in words: timed out, refused, or no such host."""
        if isinstance(exc, httpx.TimeoutException):
            return f"timed out after {self.timeout:g} s (raise it with --timeout)"
        text = str(exc) or type(exc).__name__
        cause: BaseException | None = exc
        while cause is not None:
            if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
                return "connection refused (nothing listens at that address and port)"
            if isinstance(cause, socket.gaierror) or "name or service" in str(cause).lower():
                return f"the host name does not resolve (DNS: {cause})"
            cause = cause.__cause__ or cause.__context__
        return text

    async def __aenter__(self) -> PdsClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- XRPC plumbing -------------------------------------------------------
    async def _call(
        self,
        method: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        auth: bool = True,
    ) -> dict[str, Any]:
        headers = {}
        if auth:
            if self.session is None:
                raise UnauthenticatedError(
                    "not logged in to the PDS: call login() with an app password first"
                )
            headers["Authorization"] = f"Bearer {self.session.access_jwt}"
        try:
            if body is not None:
                response = await self._http.post(f"/xrpc/{method}", json=body, headers=headers)
            else:
                response = await self._http.get(f"/xrpc/{method}", params=params, headers=headers)
        except httpx.HTTPError as exc:
            raise RemoteError(
                f"{method}: could not reach the PDS at {self.base_url}: {self._what(exc)}",
                code="pds_unreachable",
            ) from exc
        data: dict[str, Any] = {}
        parsed: Any = None
        if response.content:
            try:
                parsed = response.json()
                data = parsed if isinstance(parsed, dict) else {}
            except ValueError:
                parsed = None
        if parsed is None and (response.status_code in (404, 405) or response.is_success):
            # An XRPC server answers every method with JSON; a web page or an empty 404
            # means the URL is something else (a website, a wrong path, a proxy).
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            raise RemoteError(
                f"{self.base_url} does not look like a PDS: {method} answered HTTP "
                f"{response.status_code} with {kind}, not XRPC JSON; pass the PDS's base URL "
                "(e.g. https://pds.example, without /xrpc)",
                code="not_a_pds",
                status=response.status_code,
            )
        if response.status_code >= 400:
            raise XrpcError(method, response.status_code, data.get("error"), data.get("message"))
        return data

    # -- the calls -----------------------------------------------------------
    async def login(self, identifier: str, password: str) -> PdsSession:
        """``com.atproto.server.createSession`` with a handle or DID and an app password."""
        try:
            data = await self._call(
                "com.atproto.server.createSession",
                body={"identifier": identifier, "password": password},
                auth=False,
            )
        except XrpcError as exc:
            if exc.status in (400, 401):
                raise UnauthenticatedError(
                    f"the PDS refused the login for {identifier!r} ({exc.error}): check the "
                    "identifier and use an app password",
                    code="pds_login_failed",
                ) from exc
            raise
        self.session = PdsSession(
            did=str(data["did"]), handle=str(data.get("handle", "")), access_jwt=data["accessJwt"]
        )
        return self.session

    def _repo(self) -> str:
        if self.session is None:
            raise UnauthenticatedError("not logged in to the PDS: call login() first")
        return self.session.did

    async def create_record(
        self,
        collection: str,
        rkey: str,
        record: Mapping[str, Any],
        *,
        validate: bool | None = None,
    ) -> dict[str, Any]:
        """``com.atproto.repo.createRecord`` under a chosen key; returns ``{uri, cid, …}``."""
        return await self._write("createRecord", collection, rkey, record, validate)

    async def put_record_if_absent(
        self,
        collection: str,
        rkey: str,
        record: Mapping[str, Any],
        *,
        validate: bool | None = None,
    ) -> dict[str, Any]:
        """``com.atproto.repo.putRecord`` with ``swapRecord: null``: only if the key is free."""
        return await self._write("putRecord", collection, rkey, record, validate, swapRecord=None)

    async def _write(
        self,
        method: str,
        collection: str,
        rkey: str,
        record: Mapping[str, Any],
        validate: bool | None,
        **more: Any,
    ) -> dict[str, Any]:
        """One ``com.atproto.repo`` write of ``record`` under ``collection``/``rkey``."""
        body = {"repo": self._repo(), "collection": collection, "rkey": rkey, "record": record}
        return await self._call(
            f"com.atproto.repo.{method}", body=_validate({**body, **more}, validate)
        )

    async def get_record(
        self, collection: str, rkey: str, *, repo: str | None = None
    ) -> dict[str, Any] | None:
        """``com.atproto.repo.getRecord``: ``{uri, cid, value}``, or None if there is none."""
        try:
            return await self._call(
                "com.atproto.repo.getRecord",
                params={"repo": repo or self._repo(), "collection": collection, "rkey": rkey},
                auth=False,
            )
        except XrpcError as exc:
            if exc.error == "RecordNotFound" or exc.status == 404:
                return None
            raise

    async def publish(
        self,
        record: Mapping[str, Any],
        rkey: str,
        *,
        mode: Literal["create", "put"] = "create",
        check: Callable[[Mapping[str, Any], str], object] = validate_record,
        validate: bool | None = None,
    ) -> PublishResult:
        """Write ``record`` under ``rkey`` at most once, and say what the repository holds.

        The record is checked first (by default against its lexicon; pass
        ``check`` for rules of your own, such as "the key is toRun"): an
        invalid one raises ``RecordValidationError`` and nothing is sent.
        ``validate=True`` asks the PDS to check the record against the lexicon
        too (it fails on a PDS that does not know the lexicon); None leaves it
        to the PDS, which stores records of unknown lexicons unchecked.
        """
        check(record, rkey)
        collection = str(record["$type"])
        ours = record_cid(record)
        try:
            if mode == "put":
                written = await self.put_record_if_absent(
                    collection, rkey, record, validate=validate
                )
            else:
                written = await self.create_record(collection, rkey, record, validate=validate)
        except RemoteError as failure:
            return await self._decide_after_failure(collection, rkey, record, ours, failure)
        uri = str(written.get("uri", f"at://{self._repo()}/{collection}/{rkey}"))
        # putRecord of an identical record answers 200 without a commit: say so.
        outcome: Outcome = (
            "created" if written.get("commit") or mode == "create" else ("already_published")
        )
        status = written.get("validationStatus")
        return PublishResult(
            outcome,
            uri,
            str(written.get("cid", ours)),
            dict(record),
            str(status) if status is not None else None,
            ours,
        )

    async def _decide_after_failure(
        self,
        collection: str,
        rkey: str,
        record: Mapping[str, Any],
        ours: str,
        failure: RemoteError,
    ) -> PublishResult:
        try:
            there = await self.get_record(collection, rkey)
        except RemoteError as exc:
            raise PublishFailed(
                f"writing {collection}/{rkey} failed ({failure}) and reading it back failed "
                f"too ({exc}); it may or may not be there — publish again, it is safe",
                retryable=True,
                rkey=rkey,
            ) from exc
        if there is None:
            if _refused(failure):
                raise PublishFailed(
                    f"the PDS refused {collection}/{rkey} ({failure}) and the record is not "
                    "there; publishing again fails the same way until that is fixed (an "
                    "expired or revoked session: log in again; a refused record: check it)",
                    retryable=False,
                    rkey=rkey,
                ) from failure
            raise PublishFailed(
                f"writing {collection}/{rkey} failed ({failure}) and the record is not there: "
                "publish again",
                retryable=True,
                rkey=rkey,
            ) from failure
        value = dict(there.get("value") or {})
        theirs = record_cid(value)
        uri = str(there.get("uri", ""))
        if theirs == ours:
            return PublishResult("already_published", uri, theirs, value, ours=ours)
        return PublishResult("taken", uri, theirs, value, ours=ours)


def _validate(body: dict[str, Any], validate: bool | None) -> dict[str, Any]:
    # Absent, the PDS validates records of lexicons it knows and stores others unchecked.
    return body if validate is None else {**body, "validate": validate}


def _refused(failure: RemoteError) -> bool:
    """A 4xx answer other than "too slow" or "too many": the same request will fail again."""
    return (
        isinstance(failure, XrpcError)
        and 400 <= failure.status < 500
        and failure.status
        not in (
            408,
            429,
        )
    )
