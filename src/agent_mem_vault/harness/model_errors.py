"""How a model adapter reports a failure: one ``RemoteError`` with a code a caller can act on.

Both adapters (OpenAI-compatible, Anthropic) retry rate limits and overloaded
answers inside their SDK, with backoff that follows ``retry-after``; what is
left when retries run out, or what cannot be retried (a timeout, a stream cut
mid-reply), fails the turn with one of these codes. The turn writes nothing of
a failed reply, so the thread stays usable: the user sends again.

    model_rate_limited   429 after the retries        wait, or raise the quota
    model_overloaded     503/529 after the retries    the provider is busy; retry later
    model_timeout        no answer in time            retry; raise the adapter's timeout
    model_stream_cut     the reply stopped mid-way    retry
    model_error          anything else (auth, 404, bad tool-call JSON, …)
"""

from __future__ import annotations

from ..core.errors import RemoteError

__all__ = [
    "MODEL_ERROR",
    "MODEL_OVERLOADED",
    "MODEL_RATE_LIMITED",
    "MODEL_STREAM_CUT",
    "MODEL_TIMEOUT",
    "is_timeout",
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
