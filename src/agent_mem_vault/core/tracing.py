"""OpenTelemetry spans, optional: every helper is a no-op when ``opentelemetry-api`` is absent.

The harness (turns, model and tool calls, handoffs, human waits, operator
replies, transfers), the vault's MCP server (tool calls) and the runs registry
(takeovers, handoff records written and published) open spans through the
helpers here, so a team's tracing stack (a collector, Jaeger, …) sees why a
conversation went where it went. The app (or ``demo support --otlp``)
installs a ``TracerProvider`` to record them; with the API installed but no
provider yet, nothing could be recorded, so no span is started at all.

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

Cost: a recorded span costs what the SDK's ``start_span`` and ``end`` cost;
this module adds as little as it can to that. Callers ask :func:`active`
first and build attribute dicts only when a tracer records; a span is started
with all the attributes known then, in one dict; one object (not three
generator context managers) makes it current; a span with nothing inside
(:func:`instant`) is never made current (``benchmarks/bench_harness.py
--instructions`` counts it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any

__all__ = [
    "NO_SPAN",
    "active",
    "add_link",
    "capture_message_text",
    "captures_message_text",
    "enabled",
    "export_to_otlp",
    "instant",
    "span",
    "start",
    "traceparent",
    "use_tracer_provider",
]

AttributeValue = str | bool | int | float
Attributes = Mapping[str, AttributeValue | None]

_UNKNOWN: Any = object()  # not looked at yet
_PENDING: Any = object()  # the API without a provider: nothing can record (yet)
_tracer: Any = _UNKNOWN
"""The tracer spans start on; None when tracing is off (no API, or ``off=True``)."""
_capture_text = False
_env_provider: str | None = None
"""``OTEL_PYTHON_TRACER_PROVIDER`` when :func:`_resolve` last looked."""

# Bound on first use, so importing this module imports nothing of OpenTelemetry.
_otel: Any = None
_attach: Any = None
_detach: Any = None
_in_context: Any = None
_KINDS: dict[str, Any] = {}


class _NoSpan:
    """What the helpers give when no span is recorded: a context manager that keeps nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        pass

    def is_recording(self) -> bool:
        return False

    def end(self) -> None:
        pass


NO_SPAN: Any = _NoSpan()


class _Current:
    """A started span, current inside the ``with`` block and ended after it.

    What the API's ``start_as_current_span`` does (the same exception
    handling as its ``use_span``), in one object instead of three generator
    context managers: tracing's own cost per span is a fraction of the SDK's.
    """

    __slots__ = ("_attributes", "_kind", "_link", "_name", "_span", "_token", "_tracer")

    def __init__(
        self, tracer: Any, name: str, attributes: Any, link: str | None, kind: str
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._attributes = attributes
        self._link = link
        self._kind = kind

    def __enter__(self) -> Any:
        # Started here, not when made: a child of what is current at the ``with``.
        link = self._link
        span = self._span = self._tracer.start_span(
            self._name,
            kind=_KINDS[self._kind],
            attributes=self._attributes,
            links=_links(link) if link else None,
        )
        self._token = _attach(_in_context(span))
        return span

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _detach(self._token)
        span = self._span
        # As use_span: an Exception is an error; a BaseException (a cancelled
        # task, GeneratorExit) is not.
        if isinstance(exc, Exception) and span.is_recording():
            span.record_exception(exc)
            span.set_status(_otel.Status(_otel.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.end()


def _load_api() -> bool:
    """Import the API once and bind what every span uses; False without it."""
    global _otel, _attach, _detach, _in_context
    if _otel is None:
        try:
            from opentelemetry import context, trace
        except ImportError:
            return False
        _attach, _detach, _in_context = context.attach, context.detach, trace.set_span_in_context
        _KINDS.update((k.name.lower(), k) for k in trace.SpanKind)
        _otel = trace
    return True


def _resolve() -> Any:
    """The tracer to start spans on now, or None; called until a global provider is set."""
    global _tracer
    if not _load_api():
        _tracer = None
        return None
    global _env_provider
    _env_provider = os.environ.get("OTEL_PYTHON_TRACER_PROVIDER")
    provider = _otel.get_tracer_provider()
    if isinstance(provider, _otel.ProxyTracerProvider):
        # No global provider yet: the API would hand out non-recording spans,
        # so none is started (an app may install one later: looked at again).
        _tracer = _PENDING
        return None
    if isinstance(provider, _otel.NoOpTracerProvider):
        _tracer = None  # a global provider is set once: this one records nothing, ever
        return None
    from .version import __version__

    _tracer = provider.get_tracer("agent_mem_vault", __version__)
    return _tracer


def active() -> Any:
    """The tracer spans are recorded on, or None: then a helper builds no attributes at all."""
    tracer = _tracer
    if tracer is _PENDING and _no_provider_yet():
        return None
    if tracer is _UNKNOWN or tracer is _PENDING:
        return _resolve()
    return tracer


def _no_provider_yet() -> bool:
    """Whether no global provider is set yet, without the API's look at the environment.

    ``get_tracer_provider`` looks ``OTEL_PYTHON_TRACER_PROVIDER`` up in
    ``os.environ`` on every call until a provider is set: an exception per miss,
    several times per turn. The API's own global says the same while it is None
    and the variable was absent when :func:`_resolve` last looked.
    """
    return _env_provider is None and getattr(_otel, "_TRACER_PROVIDER", True) is None


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
        from .version import __version__

        _load_api()
        _tracer = provider.get_tracer("agent_mem_vault", __version__)


def enabled() -> bool:
    """True when ``opentelemetry-api`` is installed (spans may then be recorded)."""
    return _tracer is not None and _load_api()


def capture_message_text(on: bool = True) -> None:
    """Put message text (user input, replies, handoff notes) on spans; off by default."""
    global _capture_text
    _capture_text = bool(on)


def captures_message_text() -> bool:
    return _capture_text


def start(
    tracer: Any,
    name: str,
    attributes: Mapping[str, AttributeValue] | None,
    *,
    link: str | None = None,
    kind: str = "internal",
) -> Any:
    """A child span of the current one on ``tracer`` (from :func:`active`), current in ``with``.

    ``attributes`` go to the span as they are (no None values), in the one
    dict the SDK's sampler also sees. ``link`` is a stored ``traceparent`` to
    link to (a span that started this story elsewhere). An exception leaving
    the block is recorded and marks the span an error.
    """
    return _Current(tracer, name, attributes, link, kind)


def instant(tracer: Any, name: str, attributes: Mapping[str, AttributeValue]) -> None:
    """A span with nothing inside it (a state reached): started and ended, never current."""
    tracer.start_span(name, attributes=attributes).end()


def span(
    name: str,
    attributes: Attributes | None = None,
    *,
    link: str | None = None,
    kind: str = "internal",
) -> Any:
    """A context manager: a child span of the current one, current inside the block.

    ``attributes`` with a None value are left out. ``link`` is a stored
    ``traceparent`` to link to (a span that started this story elsewhere).
    An exception leaving the block is recorded and marks the span an error.
    ``kind`` is ``internal``, ``client`` (a model or remote call) or ``server``.
    Without a tracer that records, :data:`NO_SPAN`.
    """
    tracer = _tracer
    if tracer is _UNKNOWN or tracer is _PENDING:
        tracer = _resolve()
    if tracer is None:
        return NO_SPAN
    attrs = {k: v for k, v in attributes.items() if v is not None} if attributes else None
    return start(tracer, name, attrs, link=link, kind=kind)


def traceparent(span: Any = None) -> str | None:
    """The W3C ``traceparent`` of ``span`` (default: the current one), to store in a log.

    None when not traced.
    """
    if span is None or span is NO_SPAN:
        active()
        if _tracer is None:
            return None  # tracing off
        # None of ours: a context the app made current (e.g. an incoming request's).
        span = _otel.get_current_span()
    context = span.get_span_context()
    if not context.is_valid:
        return None
    ids = (context.trace_id, context.span_id, context.trace_flags)
    # %-formatting: a third cheaper than an f-string's format specs on a 128-bit int.
    return "00-%032x-%016x-%02x" % ids  # noqa: UP031


def add_link(span: Any, parent: str | None) -> None:
    """Link a started ``span`` to the stored ``traceparent`` ``parent``, unless already that story.

    For a span whose story is known only once it runs (a transfer learns the
    source thread's trace after it checked who may move it).
    """
    if parent and span is not NO_SPAN and span.is_recording():
        for link in _links(parent):
            span.add_link(link.context)


def _links(parent: str) -> list[Any]:
    trace = _otel
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
