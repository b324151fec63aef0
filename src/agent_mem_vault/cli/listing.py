"""The paged listings, ``handoffs`` and ``memory list``: the options they share, the
paragraph of their help that says how a page ends, and the table of one page.

Like :mod:`.options`, it imports no vault code at import time, so ``--help`` stays fast.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import click

from .options import (
    all_namespaces_option,
    choice_option,
    echo_page_note,
    emit_json,
    found_namespace,
    namespace_option,
    offset_option,
    open_vault,
    render_table,
    vault_options,
)

_PAGING = (
    "When more match than --limit, the last line says how many there are and\n"
    "the --offset that gives the next page (--json: total, more, next_offset)."
)


def list_command(
    name: str,
    *,
    statuses: Sequence[str],
    status_help: str,
    filters: Sequence[Callable[[Any], Any]],
    what: tuple[str, str],
    unnamed: Sequence[str] = ("all",),
    headers: Sequence[str],
    row: Callable[[Any], list[str]],
    namespace_at: int,
) -> Callable[[Callable[..., tuple[Any, Sequence[Any]]]], click.Command]:
    """``@list_command(name, ...)`` over ``def handoffs(vault, namespace, **query)``, which
    returns a page and its items: the command ``name`` with the options of every paged
    listing, ``--status`` (one of ``statuses``, the first by default) and the ``filters``
    among them. It finds the namespace, opens the vault, calls the function with the
    other options in ``query`` (``status``, ``limit``, ``offset`` and the filters', named
    as the vault's page methods name them) and prints the page as :func:`echo_listing`
    does; a status in ``unnamed`` is not said when nothing is found. The help is the
    function's docstring with the paging paragraph after its first line."""

    def command(call: Callable[..., tuple[Any, Sequence[Any]]]) -> click.Command:
        summary, _, rest = inspect.cleandoc(call.__doc__ or "").partition("\n\n")

        def run(
            namespace: str | None, everywhere: bool, vault_path: str, as_json: bool, **query: Any
        ) -> None:
            namespace = found_namespace(namespace, required=False, everywhere=everywhere)
            page, found = call(open_vault(vault_path), namespace, **query)
            status = query["status"]
            echo_listing(
                page,
                found,
                as_json=as_json,
                what=(*what, "" if status in unnamed else f"{status} "),
                namespace=namespace,
                headers=headers,
                row=row,
                namespace_at=namespace_at,
            )

        callback: Callable[..., None] = run
        for option in reversed(
            [
                namespace_option(required=False),
                all_namespaces_option,
                choice_option("--status", choices=statuses, help=status_help),
                *filters,
                click.option(
                    "--limit",
                    default=50,
                    show_default=True,
                    help="At most this many, newest first.",
                ),
                offset_option,
                vault_options,
            ]
        ):
            callback = option(callback)
        return click.command(name, help=f"{summary}\n\n{_PAGING}\n\n{rest}")(callback)

    return command


def echo_listing(
    page: Any,
    found: Sequence[Any],
    *,
    as_json: bool,
    what: tuple[str, str, str],
    namespace: str | None,
    headers: Sequence[str],
    row: Callable[[Any], list[str]],
    namespace_at: int,
) -> None:
    """A listing's page: JSON, or a table of ``row(item)`` lines with the page note after.

    ``what`` is (one, many, label): how the page note and the line that says
    nothing was found name the items. Listing every namespace, each row gets
    the item's namespace as a column at ``namespace_at``.
    """
    if as_json:
        emit_json(page.to_dict())
        return
    one, many, label = what
    if not found:
        echo_nothing_found(many, label, namespace, page.offset, page.total)
        echo_quarantined(page.quarantined if hasattr(page, "quarantined") else 0, one, many)
        return
    rows = [row(item) for item in found]
    columns = list(headers)
    if namespace is None:
        rows = [
            [*r[:namespace_at], item.namespace, *r[namespace_at:]]
            for r, item in zip(rows, found, strict=True)
        ]
        columns.insert(namespace_at, "NAMESPACE")
    click.echo(render_table(columns, rows))
    echo_page_note(len(found), page.total, page.offset, page.next_offset, one)
    echo_quarantined(page.quarantined if hasattr(page, "quarantined") else 0, one, many)


def echo_quarantined(count: int, one: str, many: str) -> None:
    """The line that says how many a listing left out, written outside the team."""
    if count:
        click.echo(
            f"({count} {one if count == 1 else many} left out: written outside the team, no "
            "listed key signed them; agent-mem-vault trust quarantine lists them)"
        )


def echo_nothing_found(
    plural: str, label: str, namespace: str | None, offset: int, total: int
) -> None:
    """The line a listing prints instead of an empty table."""
    where = f" in {namespace}" if namespace else ""
    more = f" from offset {offset} (there are {total})" if offset else ""
    click.echo(f"No {label}{plural}{where}{more}.")
