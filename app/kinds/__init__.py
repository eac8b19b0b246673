"""The item kinds, registered in one place.

To add a kind: create app/kinds/<name>/ with __init__.py (its pydantic model and a `KIND`
spec, see spec.py) and answer.html (its answer widget), then add the module to `_MODULES`
below. Schema, JSON Schema, loader, grading, pages, modes and analytics all go through the
registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Union

from pydantic import Field

from app.challenges.base import ExecutableMixin, ItemBase
from app.kinds import choice, debug, explain, flashcard, numeric, predict_output
from app.kinds.spec import Kind

_MODULES = (choice, predict_output, debug, numeric, explain, flashcard)

KINDS: dict[str, Kind] = {module.KIND.name: module.KIND for module in _MODULES}


def _union(kinds: list[Kind]) -> object:
    """A discriminated union over these kinds: `kind:` in YAML picks the model."""
    return Annotated[
        Union[tuple(kind.model for kind in kinds)],  # noqa: UP007
        Field(discriminator="kind"),
    ]


if TYPE_CHECKING:
    Item = ItemBase  # for type checkers, the base every kind extends
    TopicItem = ItemBase
else:
    # The items of a timed challenge set.
    Item = _union([kind for kind in KINDS.values() if kind.in_sets])
    # The items of a topic's file: untimed, never executed (flashcards have their own list,
    # `cards:`; executable items belong in a set, where `ranklab verify` proves their keys).
    TopicItem = _union([k for k in KINDS.values() if not k.is_card and not k.executable])


def _executable_models() -> tuple[type[ExecutableMixin], ...]:
    models: list[type[ExecutableMixin]] = []
    for kind in KINDS.values():
        if kind.executable:
            if not issubclass(kind.model, ExecutableMixin):
                raise TypeError(f"executable kind {kind.name} must extend ExecutableMixin")
            models.append(kind.model)
    return tuple(models)


# Kinds whose snippet runs on the executor (and whose keys `ranklab verify` proves).
EXECUTABLE_KINDS = _executable_models()


def proven_by_run(item: ItemBase) -> bool:
    """Whether `ranklab verify` runs this item to prove its key: an executable kind, or a
    numeric item whose answer its snippet prints (`printed:`)."""
    return isinstance(item, EXECUTABLE_KINDS) or numeric.runs_on_verify(item)


def kind_of(item: ItemBase) -> Kind:
    """The registered kind of an item."""
    name: str = getattr(item, "kind")  # noqa: B009  (every registered model has one)
    return KINDS[name]
