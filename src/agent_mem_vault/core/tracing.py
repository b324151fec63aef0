"""OpenTelemetry spans, optional: every helper is a no-op when ``opentelemetry-api`` is absent.

The harness (turns, model and tool calls, handoffs, human waits, operator
replies, transfers), the vault's MCP server (tool calls) and the runs registry
(takeovers, handoff records written and published) open spans through the
helpers here, so a team's tracing stack (a collector, Jaeger, …) sees why a
conversation went where it went. With the API installed but no SDK configured
the global tracer hands out non-recording spans; the app (or ``demo support
--otlp``) installs a ``TracerProvider`` to record them.

Attributes follow the GenAI semantic conventions where they exist
(``gen_ai.system``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``,
``gen_ai.tool.name``, …) and use ``agent_mem_vault.*`` otherwise. Message text
is left out unless the app calls :func:`capture_message_text`.

One conversation reads as one story across hosts: a span's W3C
``traceparent`` (:func:`traceparent`) is stored in the thread's log, and a
later span on the same thread started elsewhere (a takeover, a transfer's
target) links to it (:func:`span` ``link=``).

Whether the API is importable is checked once, on first use; this module
imports nothing of OpenTelemetry at import time, so the CLI starts as fast.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = [
    "NO_SPAN",
    "capture_message_text",
    "captures_message_text",
    "enabled",
    "export_to_otlp",
    "span",
    "traceparent",
    "use_tracer_provider",
]

AttributeValue = str | bool | int | float
Attributes = Mapping[str, AttributeValue | None]

_UNKNOWN = object()
_tracer: Any = _UNKNOWN
_capture_text = False


class _NoSpan:
    """What :func:`span` yields when tracing is off: takes attributes, keeps nothing."""

    __slots__ = ()

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        pass

    def is_recording(self) -> bool:
        return False


NO_SPAN: Any = _NoSpan()


def _get_tracer() -> Any:
    global _tracer
    if _tracer is _UNKNOWN:
        try:
            from opentelemetry import trace
        except ImportError:
            _tracer = None
        else:
            from .. import __version__

            # A proxy: spans go to whichever provider the app installs, even later.
            _tracer = trace.get_tracer("agent_mem_vault", __version__)
    return _tracer


def use_tracer_provider(provider: Any, *, off: bool = False) -> None:
    """Send this package's spans to ``provider`` rather than the global one.

    ``off=True`` turns tracing off here even with ``opentelemetry-api``
    installed (the cost is then that of an absent API); ``provider=None`` and
    ``off=False`` go back to the global provider.
    """
    global _tracer
    if off:
        _tracer = None
    elif provider is None:
        _tracer = _UNKNOWN
    else:
        from .. import __version__

        _tracer = provider.get_tracer("agent_mem_vault", __version__)


def enabled() -> bool:
    """True when ``opentelemetry-api`` is installed (spans may then be recorded)."""
    return _get_tracer() is not None


def capture_message_text(on: bool = True) -> None:
    """Put message text (user input, replies, handoff notes) on spans; off by default."""
    global _capture_text
    _capture_text = bool(on)


def captures_message_text() -> bool:
    return _capture_text


@contextlib.contextmanager
def span(
    name: str,
    attributes: Attributes | None = None,
    *,
    link: str | None = None,
    kind: str = "internal",
) -> Iterator[Any]:
    """A child span of the current one, current inside the block.

    ``attributes`` with a None value are left out. ``link`` is a stored
    ``traceparent`` to link to (a span that started this story elsewhere).
    An exception leaving the block is recorded and marks the span an error.
    ``kind`` is ``internal``, ``client`` (a model or remote call) or ``server``.
    """
    tracer = _tracer if _tracer is not _UNKNOWN else _get_tracer()
    if tracer is None:
        yield NO_SPAN
        return
    attrs = {k: v for k, v in attributes.items() if v is not None} if attributes else None
    with tracer.start_as_current_span(
        name,
        kind=_kind(kind),
        attributes=attrs,
        links=_links(link) if link else None,
    ) as current:
        yield current


_KINDS: dict[str, Any] = {}


def _kind(kind: str) -> Any:
    found = _KINDS.get(kind)
    if found is None:
        from opentelemetry.trace import SpanKind

        found = _KINDS[kind] = getattr(SpanKind, kind.upper())
    return found


def traceparent() -> str | None:
    """The W3C ``traceparent`` of the current span, to store in a log; None when not traced."""
    if _get_tracer() is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def _links(parent: str | None) -> list[Any]:
    if not parent:
        return []
    from opentelemetry import trace

    parts = parent.split("-")
    if len(parts) != 4:
        return []  # not ours to fail on: a damaged link loses the link, not the turn
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return []
    current = trace.get_current_span().get_span_context()
    if current.is_valid and current.trace_id == trace_id:
        return []  # the same story already
    context = trace.SpanContext(
        trace_id, span_id, is_remote=True, trace_flags=trace.TraceFlags(flags)
    )
    return [trace.Link(context)] if context.is_valid else []


def export_to_otlp(url: str, *, service_name: str = "agent-mem-vault") -> Any:
    """Send this process's spans to an OTLP/HTTP endpoint (a collector, Jaeger, …).

    ``url`` is the collector's base URL (``http://localhost:4318``) or its
    traces endpoint (``…/v1/traces``). Installs a global ``TracerProvider``
    with a batching exporter and returns it; call its ``shutdown()`` before
    exit to send what is left. Needs the ``otlp`` extra.
    """
    from urllib.parse import urlsplit

    from .errors import InvalidInputError

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidInputError(
            f"--otlp needs an http(s) URL of an OTLP/HTTP endpoint, e.g. "
            f"http://localhost:4318, not {url!r}"
        )
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise InvalidInputError(
            "sending spans needs the OpenTelemetry SDK and OTLP exporter; install them with "
            "pip install 'agent-mem-vault[otlp]'"
        ) from None
    endpoint = (
        url if parts.path.rstrip("/").endswith("/v1/traces") else url.rstrip("/") + "/v1/traces"
    )
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint), schedule_delay_millis=1000)
    )
    trace.set_tracer_provider(provider)
    return provider
