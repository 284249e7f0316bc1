"""Guards a model's answer passes before it changes anything on disk.

A model may name an item it was never shown (a made-up or misread id). Every job
that lets a model act on shown items treats that the same way: a removal of an
unknown item is dropped (nothing it could mean is safe to remove), any other
action keeps its content as a new item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping

T = TypeVar("T")


def shown_target(
    action: str,
    target_id: str | None,
    shown: Mapping[str, T],
    *,
    removal: str,
    noun: str,
    notes: list[str],
) -> tuple[str, T | None] | None:
    """The action to take and the shown item it is about; None: drop the action.

    ``removal``: the action that would remove its target; ``noun``: what the items
    are, for the note appended to ``notes`` whenever the answer is changed."""
    target = shown.get(target_id) if target_id else None
    if action == "new" or target is not None:
        return action, target
    if action == removal:
        notes.append(f"{removal} of {target_id!r} dropped: not a {noun} it was shown")
        return None
    notes.append(f"{action} of {target_id!r} made new: not a {noun} it was shown")
    return "new", None
