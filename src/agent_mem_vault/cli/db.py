"""``agent-mem-vault db``: the PostgreSQL schema, for hosts that share a database.

Hosts upgrade the schema themselves on start-up; this command is for doing it
ahead of a deploy, and for seeing where a database stands. psycopg (and asyncio) are
imported only when a subcommand runs, so ``agent-mem-vault --help`` stays fast.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..store.migrations import SchemaStatus

__all__ = ["db"]

_dsn_option = click.option(
    "--dsn",
    envvar="AGENT_MEM_VAULT_DSN",
    show_envvar=True,
    required=True,
    metavar="DSN",
    help="PostgreSQL connection string, e.g. postgresql://app@db.internal/agents.",
)
_json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@click.group()
def db() -> None:
    """PostgreSQL schema: see where it stands, bring it up to date."""


@db.command()
@_dsn_option
@_json_option
def upgrade(dsn: str, as_json: bool) -> None:
    """Apply pending schema migrations (safe to run from several hosts at once).

    \b
    Example:
      agent-mem-vault db upgrade --dsn postgresql://app@db.internal/agents
    """
    import asyncio

    from ..store import require_postgres

    require_postgres()
    from ..store.postgres import upgrade_postgres_schema

    status = asyncio.run(upgrade_postgres_schema(dsn))
    if as_json:
        click.echo(json.dumps(status.to_dict()))
    elif status.applied:
        click.echo(f"applied {', '.join(status.applied)}; schema is at version {status.current}")
    else:
        click.echo(f"schema is up to date at version {status.current}")


@db.command()
@_dsn_option
@_json_option
def status(dsn: str, as_json: bool) -> None:
    """Show the schema version of the database and of this agent-mem-vault."""
    import asyncio

    from ..store import require_postgres

    require_postgres()
    from ..store.postgres import postgres_schema_status

    result = asyncio.run(postgres_schema_status(dsn))
    if as_json:
        click.echo(json.dumps(result.to_dict()))
    else:
        click.echo(_describe(result))


def _describe(status: SchemaStatus) -> str:
    line = f"database schema version {status.current}, newest known {status.newest}"
    if status.current > status.newest:
        return line + "; the database is newer than this agent-mem-vault: upgrade agent-mem-vault"
    if status.pending:
        return line + f"; pending: {', '.join(status.pending)} (run agent-mem-vault db upgrade)"
    return line + "; up to date"
