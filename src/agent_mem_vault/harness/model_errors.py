"""How a model adapter reports a failure: one ``RemoteError`` with a code a caller can act on.

Both adapters (OpenAI-compatible, Anthropic) retry rate limits and overloaded
answers inside their SDK, with backoff that follows ``retry-after``; what is
left when retries run out, or what cannot be retried (a timeout, a stream cut
mid-reply), fails the turn with one of these codes. The turn writes nothing of
a failed reply, so the thread stays usable: the user sends again.

    model_rate_limited   429 after the retries        wait, or raise the quota
    model_overloaded     503/529 after the retries    the provider is busy; retry later
    model_timeout        no answer in time            retry; raise the adapter's timeout
    model_stream_cut     the reply stopped mid-way    retry (the connection broke
                         after the model began answering; one that never
                         opened is a model_error, "could not connect")
    model_error          anything else (auth, 404, bad tool-call JSON, …)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ..core.errors import RemoteError

__all__ = [
    "MODEL_ERROR",
    "MODEL_OVERLOADED",
    "MODEL_RATE_LIMITED",
    "MODEL_STREAM_CUT",
    "MODEL_TIMEOUT",
    "SdkCall",
    "connection_lost",
    "is_timeout",
    "sdk_errors",
    "status_code",
    "stream_cut",
    "timed_out",
]

MODEL_ERROR = "model_error"
MODEL_RATE_LIMITED = "model_rate_limited"
MODEL_OVERLOADED = "model_overloaded"
MODEL_TIMEOUT = "model_timeout"
MODEL_STREAM_CUT = "model_stream_cut"


def status_code(status: int) -> str:
    """The code of an HTTP failure that survived the SDK's retries."""
    if status == 429:
        return MODEL_RATE_LIMITED
    if status in (503, 529):
        return MODEL_OVERLOADED
    return MODEL_ERROR


def is_timeout(exc: BaseException) -> bool:
    """True for a read/connect timeout of any HTTP stack (httpx, httpx2, asyncio)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, TimeoutError) or "Timeout" in type(current).__name__:
            return True
        current = current.__cause__ or current.__context__
    return False


def connection_lost(where: str, exc: BaseException, *, answering: bool) -> RemoteError:
    """A connection that failed, told by when: before the model answered, or while it did.

    ``answering`` is whether the response had begun (its status and headers had
    arrived) when the connection failed. SDKs do not agree on how they report a
    body cut mid-way (one release wraps it as a connection error, the next as
    its HTTP stack's own error), so the adapter says which it was, not the type.
    """
    if answering:
        return stream_cut(where, f"{type(exc).__name__}: {exc}")
    return RemoteError(
        f"could not connect to {where}: {exc}; check the base URL, that the server is "
        "running and the network, then send again",
        code=MODEL_ERROR,
    )


def timed_out(where: str) -> RemoteError:
    return RemoteError(
        f"{where} did not answer in time; nothing of the reply was kept, so send the "
        "message again, or raise the adapter's timeout if the model is slow",
        code=MODEL_TIMEOUT,
    )


def stream_cut(where: str, detail: str) -> RemoteError:
    return RemoteError(
        f"the reply of {where} stopped mid-way ({detail}); nothing of it was kept, so "
        "send the message again",
        code=MODEL_STREAM_CUT,
    )


class SdkCall:
    """One streamed request under :func:`sdk_errors`: whether its answer has begun."""

    answering = False
    """Set once the response's status and headers are in: a cut after is mid-reply."""


@contextlib.contextmanager
def sdk_errors(
    sdk: Any,
    where: str,
    status_error: Callable[[Any], RemoteError],
    other_error: Callable[[Exception, bool], RemoteError],
) -> Iterator[SdkCall]:
    """Turn what a provider's SDK (or its HTTP stack) raises into one ``RemoteError``.

    Both SDKs name their failures alike (``APIStatusError``, ``APITimeoutError``,
    ``APIConnectionError``); an HTTP answer that survived the retries goes to the
    adapter's ``status_error``. What the SDK does not wrap (errors of the HTTP
    stack while the stream is read) is a timeout if any of its causes is one,
    else the adapter's ``other_error(exc, answering)`` tells it.
    """
    call = SdkCall()
    try:
        yield call
    except sdk.APIStatusError as exc:
        raise status_error(exc) from exc
    except sdk.APITimeoutError as exc:
        raise timed_out(where) from exc
    except sdk.APIConnectionError as exc:
        # SDK releases wrap a body cut mid-reply as a connection error too.
        raise connection_lost(where, exc, answering=call.answering) from exc
    except RemoteError:
        raise
    except Exception as exc:
        if is_timeout(exc):
            raise timed_out(where) from exc
        raise other_error(exc, call.answering) from exc
