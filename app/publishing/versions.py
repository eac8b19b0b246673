"""A unit's version: the content needed to serve a set, topic or lab again, and its hash.

The payload holds everything learners see plus the snippets (a set's code, fixes and proofs; a
topic's cheat sheet and proofs; a lab's starters and solutions), as JSON. The hash covers the
payload but not the file's path: a file moved unchanged is the same version.

Pure: the standard library and the loader's types.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from app.challenges import cheatsheet
from app.challenges.loader import LoadedLab, LoadedSet, LoadedTopic
from app.challenges.schema import ChallengeSet, Topic
from app.labs.schema import Lab

Kind = Literal["set", "topic", "lab"]
Loaded = LoadedSet | LoadedTopic | LoadedLab


@dataclass(frozen=True)
class Unit:
    """One loaded unit as a version: its kind, id, path, payload and content hash."""

    kind: Kind
    id: str
    path: str
    payload: dict[str, Any]
    hash: str
    loaded: Loaded


def _positions(positions: dict[str, tuple[int, int]]) -> dict[str, list[int]]:
    return {key: list(value) for key, value in positions.items()}


def payload_of(loaded: Loaded) -> tuple[Kind, str, dict[str, Any]]:
    """The kind, id and JSON-ready content of a loaded unit."""
    if isinstance(loaded, LoadedSet):
        payload: dict[str, Any] = {
            "set": loaded.challenge_set.model_dump(mode="json"),
            "code": loaded.code,
            "fixed_code": loaded.fixed_code,
            "proof_code": loaded.proof_code,
            "proof_refs": _positions(loaded.proof_refs),
            "fact_at": _positions(loaded.fact_at),
        }
        tags = _misconception_tags(loaded.challenge_set)
        if tags:  # only when tagged: an untagged set's version keeps the hash it had
            payload["misconceptions"] = tags
        return "set", loaded.challenge_set.id, payload
    if isinstance(loaded, LoadedTopic):
        topic_payload: dict[str, Any] = {
            "topic": loaded.topic.model_dump(mode="json"),
            "cheat_sheet": loaded.cheat_sheet,
            "proof_code": loaded.proof_code,
            "entry_proof_code": loaded.entry_proof_code,
            "lesson_code": loaded.lesson_code,
            "fact_at": _positions(loaded.fact_at),
        }
        if loaded.item_code:  # only when its items show code: other topics keep their hash
            topic_payload["item_code"] = loaded.item_code
        return "topic", loaded.topic.id, topic_payload
    return (
        "lab",
        loaded.lab.id,
        {
            "lab": loaded.lab.model_dump(mode="json"),
            "starters": loaded.starters,
            "solutions": loaded.solutions,
        },
    )


def _misconception_tags(challenge_set: ChallengeSet) -> dict[str, dict[str, str]]:
    """Item id -> option id -> misconception id: the options' tags, which their dump leaves out
    (app.challenges.base.Option) so that tagging keeps each item's proofs."""
    tags: dict[str, dict[str, str]] = {}
    for item in challenge_set.items:
        for option in getattr(item, "options", []):
            if option.misconception is not None:
                tags.setdefault(item.id, {})[option.id] = option.misconception
    return tags


def _with_tags(payload: dict[str, Any]) -> dict[str, Any]:
    """A set payload's dump with its options' misconception tags put back."""
    tags = payload.get("misconceptions") or {}
    if not tags:
        return dict(payload["set"])
    dumped = json.loads(json.dumps(payload["set"]))  # a copy: the payload stays as stored
    for item in dumped["items"]:
        for option in item.get("options") or []:
            tag = tags.get(item["id"], {}).get(option["id"])
            if tag is not None:
                option["misconception"] = tag
    return dict(dumped)


def hash_of(payload: dict[str, Any]) -> str:
    """The content hash of a payload (sha256 of its canonical JSON)."""
    dump = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(dump.encode()).hexdigest()


def unit_of(loaded: Loaded) -> Unit:
    """A loaded set, topic or lab as a version."""
    kind, unit_id, payload = payload_of(loaded)
    return Unit(kind, unit_id, loaded.path, payload, hash_of(payload), loaded)


def _tuples(positions: dict[str, list[int]]) -> dict[str, tuple[int, int]]:
    return {key: (value[0], value[1]) for key, value in positions.items()}


def loaded_of(kind: str, path: str, payload: dict[str, Any]) -> Loaded:
    """Rebuild a loaded unit from a stored payload (the inverse of payload_of). The payload
    holds field names (a card's `prompt`, where its file says `front`): read by name too."""
    if kind == "set":
        return LoadedSet(
            ChallengeSet.model_validate(_with_tags(payload), by_name=True),
            path,
            dict(payload["code"]),
            dict(payload["fixed_code"]),
            [],
            dict(payload["proof_code"]),
            _tuples(payload["proof_refs"]),
            _tuples(payload["fact_at"]),
        )
    if kind == "topic":
        topic = LoadedTopic(
            Topic.model_validate(payload["topic"], by_name=True),
            path,
            payload["cheat_sheet"],
            dict(payload["proof_code"]),
            dict(payload["entry_proof_code"]),
            fact_at=_tuples(payload["fact_at"]),
            lesson_code=_lesson_code(payload),
            item_code=dict(payload.get("item_code", {})),
        )
        if topic.cheat_sheet is not None:
            topic.claims, _problems = cheatsheet.claims(topic.cheat_sheet)
        return topic
    if kind == "lab":
        lab = Lab.model_validate(payload["lab"], by_name=True)
        return LoadedLab(lab, path, payload["starters"], payload["solutions"])
    raise ValueError(f"unknown content kind {kind!r}")


def _lesson_code(payload: dict[str, Any]) -> dict[str, str]:
    """A topic payload's lesson examples' code. A version stored before the payload held it
    has only its inline examples' code (a `code_file` one's is lost: it shows as unproven)."""
    if "lesson_code" in payload:
        return dict(payload["lesson_code"])
    lesson = payload["topic"].get("lesson") or {}
    return {
        example["id"]: example["code"]
        for section in lesson.get("sections", [])
        for example in section.get("examples", [])
        if example.get("code") is not None
    }


def stored(kind: str, path: str, text: str) -> Unit:
    """A stored version read back: the unit it was, with its hash computed again."""
    payload = json.loads(text)
    loaded = loaded_of(kind, path, payload)
    unit_kind: Kind = "set" if kind == "set" else "topic" if kind == "topic" else "lab"
    return Unit(unit_kind, payload_id(kind, payload), path, payload, hash_of(payload), loaded)


def payload_id(kind: str, payload: dict[str, Any]) -> str:
    """The unit id a payload holds."""
    return str(payload[kind]["id"])


def dump(payload: dict[str, Any]) -> str:
    """A payload as the JSON text stored with its version."""
    return json.dumps(payload, sort_keys=True, ensure_ascii=False)
