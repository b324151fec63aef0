"""A ``Vault`` method that answers with another one's answer in a simpler shape.

``list_handoffs`` is ``page_handoffs`` without the paging, ``list_memories`` is
``page_memories``'s, ``search_memory`` is ``search_page``'s as ``SearchHits``:
each takes exactly the arguments of the method it views. :func:`view_of` gives
the view those arguments, so a filter added to the page is one the view takes
too, and ``help`` and ``inspect.signature`` show them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

__all__ = ["view_of"]

_P = ParamSpec("_P")
_S = TypeVar("_S")
_R = TypeVar("_R")
_V = TypeVar("_V")


def view_of(
    source: Callable[Concatenate[_S, _P], _R],
) -> Callable[[Callable[[_S, _R], _V]], Callable[Concatenate[_S, _P], _V]]:
    """``@view_of(page_handoffs)`` over ``def list_handoffs(self, page) -> list[Handoff]``:
    a method that takes ``page_handoffs``'s arguments, calls it, and returns what the
    decorated function makes of its answer.

    ``source`` is the function as the class body defines it (defined above the view),
    called as it is: a subclass that overrides it does not change the view.
    """

    def decorate(view: Callable[[_S, _R], _V]) -> Callable[Concatenate[_S, _P], _V]:
        def method(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _V:
            return view(self, source(self, *args, **kwargs))

        method.__name__ = view.__name__
        method.__qualname__ = view.__qualname__
        method.__module__ = view.__module__
        method.__doc__ = view.__doc__
        returns = inspect.signature(view).return_annotation
        method.__signature__ = inspect.signature(source).replace(  # type: ignore[attr-defined]
            return_annotation=returns
        )
        return method

    return decorate
