"""One in-memory span exporter for the whole test process (a tracer provider is set once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the dev extra installs the OpenTelemetry SDK")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_mem_vault.core import tracing

_PROVIDER = TracerProvider()
_EXPORTER = InMemorySpanExporter()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """The spans finished during the test; message text capture is off again after it."""
    if trace.get_tracer_provider() is not _PROVIDER:
        trace.set_tracer_provider(_PROVIDER)
    _EXPORTER.clear()
    yield _EXPORTER
    tracing.capture_message_text(False)
