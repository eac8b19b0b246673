"""A loaded set with each parameterised item replaced by its variants, each an item of its own
(`<item id>@<variant key>`), so that verify runs, records and skips every variant as it does
any item, and a proof names the exact variant it holds for."""

from __future__ import annotations

import dataclasses

from app.challenges import variants
from app.challenges.loader import LoadedSet
from app.challenges.schema import ItemBase

SEPARATOR = "@"


def variant_item_id(item_id: str, key: str) -> str:
    """The id a variant is verified and recorded under; the item's own id for key ""."""
    return f"{item_id}{SEPARATOR}{key}" if key else item_id


def base_id(item_id: str) -> str:
    """The id of the item a variant's id belongs to (itself for a plain item)."""
    return item_id.partition(SEPARATOR)[0]


def expanded(loaded: LoadedSet) -> LoadedSet:
    """The set as verify sees it: every variant an item (the set itself when none has params)."""
    if loaded.expanded is not None:
        return loaded.expanded
    items = loaded.challenge_set.items
    if not any(variants.params_of(item) for item in items):
        loaded.expanded = loaded
        return loaded
    flat: list[ItemBase] = []
    code, fixed_code = dict(loaded.code), dict(loaded.fixed_code)
    labels: dict[str, str] = {}
    for item in items:
        if not variants.params_of(item):
            flat.append(item)
            continue
        code.pop(item.id, None)
        fixed = fixed_code.pop(item.id, None)
        for variant in variants.variants_of(item):
            name = variant_item_id(item.id, variant.key)
            rendered = variants.render(item, variant.key).model_copy(update={"id": name})
            flat.append(rendered)
            labels[name] = variant.label
            code[name] = getattr(rendered, "code", None) or ""
            if fixed is not None:
                constants = {k: v for k, v in variant.params.items() if k != variants.RESERVED}
                fixed_code[name] = variants.rewrite(fixed, constants)
    subset = loaded.challenge_set.model_copy(update={"items": flat})
    result = dataclasses.replace(
        loaded, challenge_set=subset, code=code, fixed_code=fixed_code, variant_labels=labels
    )
    result.expanded = result
    loaded.expanded = result
    return result


def shown_name(loaded: LoadedSet, item_id: str) -> str:
    """How a verdict line names an item: a variant with its parameters."""
    label = loaded.variant_labels.get(item_id)
    return f"{item_id} ({label})" if label else item_id
