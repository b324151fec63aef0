"""``agent-mem-vault demo support``: the harness design's support desk with the operator console.

Thin on purpose: take the port (:mod:`.listen`; failing there prints nothing else), build
the demo (:func:`agent_mem_vault.server.support_demo.build_support_demo`), print where it
is and how to sign in, and serve it with uvicorn.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..core.ports import DEMO_PORT


@click.group()
def demo() -> None:
    """Runnable demos of the harness."""


@demo.command()
@click.option("--port", type=click.IntRange(1, 65535), default=DEMO_PORT, show_default=True)
@click.option(
    "--host",
    "bind",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; the default keeps the demo on this machine.",
)
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("support-demo.db"),
    show_default=True,
    help="SQLite file that keeps the threads.",
)
@click.option(
    "--otlp",
    metavar="URL",
    default=None,
    help="Send OpenTelemetry spans to this OTLP/HTTP endpoint (a collector, Jaeger), "
    "e.g. http://localhost:4318; needs the otlp extra.",
)
def support(port: int, bind: str, db: Path, otlp: str | None) -> None:
    """Start the support desk: main model, billing agent, a person, a billing team harness.

    \b
    Models: offline rule-based unless AGENT_MEM_VAULT_MODEL names a model of an
    OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY), or a claude-…
    model of Anthropic's API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL).
    """
    from ..server.support_demo import DEMO_USERS, build_support_demo
    from .listen import listen, serve_socket

    provider = None
    if otlp is not None:
        from ..core.errors import InvalidInputError
        from ..core.tracing import export_to_otlp

        try:
            provider = export_to_otlp(otlp, service_name="agent-mem-vault-demo")
        except InvalidInputError as exc:
            raise click.BadParameter(exc.message, param_hint="--otlp") from None

    try:
        sock = listen(bind, port)  # before the banner: a port in use is the only thing shown
        built = build_support_demo(db)
        url = f"http://[{bind}]:{port}" if ":" in bind else f"http://{bind}:{port}"  # IPv6
        click.echo(
            f"Support desk demo at {url}  (threads in {db}; models: {built.model_description})"
        )
        click.echo(f"  Operator console:  {url}/console/#token=token-olga")
        click.echo(f"  Customer chat:     {url}/console/chat.html#token=token-ada&operator=olga")
        click.echo(f"  API (OpenAPI):     {url}/openapi.json")
        click.echo("  Logins (Authorization: Bearer <token>):")
        roles = {"ada": "customer", "olga": "operator", "bob": "another tenant"}
        for token, user in DEMO_USERS.items():
            click.echo(
                f"    {token:<12} {user.id} ({roles.get(user.id, 'user')}, tenant {user.tenant_id})"
            )
        if bind not in ("127.0.0.1", "localhost", "::1"):
            click.echo(
                f"  Warning: listening on {bind}, beyond this machine; the logins above are "
                "public demo tokens, so anyone who reaches this address can use them."
            )
        if otlp is not None:
            click.echo(f"  Traces (OTLP/HTTP): {otlp}")
        click.echo("Press Ctrl+C to stop.")
        serve_socket(built.app, sock)
    finally:
        if provider is not None:
            provider.shutdown()  # sends the spans still in the batch
