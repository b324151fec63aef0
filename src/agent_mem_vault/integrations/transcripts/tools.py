"""What every reader does with a tool call: its kind, and the todo lists clients write.

The four clients name their tools differently but sort into the same kinds
(``model.ToolKind``), and each writes its todo list or plan as a tool call
whose items differ only in the keys they use. A reader describes its client's
names once, as a :class:`ToolNames`, and the sorting and the todo items are
done here, the same way for every client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .model import Entry, TodoItem, TodoList, ToolCall, ToolKind, is_vault_handoff_tool

__all__ = ["ToolNames", "obj", "todo_list"]


@dataclass(frozen=True)
class ToolNames:
    """One client's tool names: which write files, which run commands, which keep its todos."""

    edit: frozenset[str]
    command: frozenset[str]
    todo: frozenset[str] = frozenset()

    def kind(self, name: str, namespace: str | None = None) -> ToolKind:
        """``edit``, ``command``, ``handoff`` (the vault's own ``create_handoff``) or ``other``."""
        if name in self.edit:
            return "edit"
        if name in self.command:
            return "command"
        if is_vault_handoff_tool(name, namespace):
            return "handoff"
        return "other"

    def is_todo(self, name: str) -> bool:
        return name in self.todo

    def entries(
        self,
        name: str,
        args: dict[str, Any],
        *,
        finished: bool,
        todo_text: Iterable[str],
        edited: Callable[[], tuple[str, ...]],
        exit_status: Callable[[], int | None],
    ) -> list[Entry]:
        """A call as the entries of a transcript: its todo list, or a ``ToolCall``.

        ``edited`` finds the paths an edit wrote and ``exit_status`` the status a
        command ended with; each is asked only for a call of its kind.
        """
        if self.is_todo(name):
            todos = todo_list(args.get("todos"), todo_text)
            return [todos] if todos is not None else []
        kind = self.kind(name)
        command = args.get("command")
        return [
            ToolCall(
                name,
                kind,
                edited() if kind == "edit" else (),
                command if kind == "command" and isinstance(command, str) else None,
                exit_status() if kind == "command" else None,
                finished,
            )
        ]


def todo_list(
    value: Any, text: Iterable[str], *, default_status: str = "", need_text: bool = False
) -> TodoList | None:
    """The items of a todo tool's list argument; None when it is not a list.

    ``text``: the keys that may hold an item's text, the first one not empty
    wins (``content``, ``description``, ``step``). ``need_text``: leave out
    items whose text is missing or not a string (else it is read as a string,
    ``""`` when missing). An item's status is the client's own word, or
    ``default_status`` when it has none.
    """
    if not isinstance(value, list):
        return None
    keys = tuple(text)
    items = []
    for item in value:
        if not isinstance(item, dict):
            continue
        words = next((item[k] for k in keys if item.get(k)), item.get(keys[-1]))
        if need_text and not isinstance(words, str):
            continue
        items.append(TodoItem(str(words or ""), str(item.get("status") or default_status)))
    return TodoList(tuple(items))


def obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else ``{}``: a damaged field reads as empty."""
    return value if isinstance(value, dict) else {}
