"""`ranklab new set|topic|lab NAME`: write a starting point that validates and verifies as it is.

A set goes to DIR/NAME/, a topic to DIR/NAME/, a lab to DIR/labs/NAME/. Nothing is written over:
an existing folder, or an id that a file under DIR already uses (sets and topics share one
namespace, labs have their own), is refused with the path that holds it. A set or lab must name a
topic that exists under DIR, so a typo cannot start a new topic by accident.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from app.challenges import json_schema, loader
from app.challenges import scaffold_templates as templates
from app.challenges.limits import MAX_FILE_BYTES

KINDS = ("set", "topic", "lab")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_ID = 100


class ScaffoldError(Exception):
    """Why nothing was written (the message is for the author)."""


@dataclass
class Ids:
    """The ids already used under a folder, each with the file that uses it, and topic titles."""

    sets: dict[str, str] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)
    labs: dict[str, str] = field(default_factory=dict)
    topic_titles: dict[str, str] = field(default_factory=dict)  # casefolded title -> topic id


def scan_ids(root: Path) -> Ids:
    """Read the top-level `id:` (and a topic's `title:`) of every YAML file under root, broken
    files included as far as they parse: an id is taken even while its file has errors."""
    ids = Ids()
    if not root.is_dir():
        return ids
    for path in loader.challenge_files(root):
        document = _top_level(path)
        found = document.get("id")
        if not isinstance(found, str):
            continue
        shown = str(path)
        if path.name == loader.LAB_FILE:
            ids.labs.setdefault(found, shown)
        elif path.name == loader.TOPIC_FILE:
            ids.topics.setdefault(found, shown)
            title = document.get("title")
            if isinstance(title, str):
                ids.topic_titles.setdefault(title.casefold(), found)
        else:
            ids.sets.setdefault(found, shown)
    return ids


# A file that does not parse still holds its id: read a top-level `id:` line of it.
_ID_LINE = re.compile(r"^id:[ \t]*[\"']?([a-z0-9][a-z0-9-]*)[\"']?[ \t]*(?:#.*)?$", re.M)


def _top_level(path: Path) -> dict[str, object]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return {}
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    try:
        document = YAML(typ="safe").load(text)
    except YAMLError:
        line = _ID_LINE.search(text)
        return {"id": line.group(1)} if line else {}
    return document if isinstance(document, dict) else {}


def title_of(name: str) -> str:
    """A first title from an id: "ddp-basics" -> "Ddp basics" (the author will edit it)."""
    words = name.replace("-", " ").strip()
    return words[:1].upper() + words[1:]


def _check_name(kind: str, name: str) -> None:
    if not _SLUG.match(name) or len(name) > MAX_ID:
        raise ScaffoldError(
            f"{name!r} cannot be a {kind} id: use lowercase letters, digits and dashes, starting "
            f"with a letter or digit (at most {MAX_ID} characters), e.g. ddp-basics"
        )


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _check_free(kind: str, name: str, ids: Ids) -> None:
    """Refuse an id already used where it would clash (sets and topics share a namespace)."""
    taken = {"set": ("set", ids.sets), "topic": ("topic", ids.topics), "lab": ("lab", ids.labs)}
    clashes = [taken[kind]]
    if kind in ("set", "topic"):
        clashes.append(taken["topic" if kind == "set" else "set"])
    for what, used in clashes:
        if name in used:
            raise ScaffoldError(
                f"the id {name!r} is already used by the {what} in {used[name]}: choose another"
            )


def _resolve_topic(topic: str | None, ids: Ids, root: Path, kind: str) -> str:
    """The topic id a set or lab names: it must exist under root (by id or title)."""
    if not topic:
        known = ", ".join(sorted(ids.topics)) or "none yet"
        raise ScaffoldError(
            f"a {kind} belongs to a topic: give --topic ID (topics under {root}: {known}; "
            "`ranklab new topic NAME` starts one)"
        )
    if topic in ids.topics:
        return topic
    if topic.casefold() in ids.topic_titles:
        return ids.topic_titles[topic.casefold()]
    raise ScaffoldError(
        f"no topic {topic!r} under {root}{_did_you_mean(topic, ids.topics)} "
        f"(start it with `ranklab new topic {topic}`)"
    )


def _relative(target: Path, folder: Path) -> str:
    return Path(os.path.relpath(target, folder)).as_posix()


def create(kind: str, name: str, root: Path, topic: str | None = None) -> list[Path]:
    """Write a new set, topic or lab under root; return the files written. Raises ScaffoldError
    (and writes nothing) when the name is not an id, is taken, or the folder exists."""
    if kind not in KINDS:
        raise ScaffoldError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    _check_name(kind, name)
    if root.exists() and not root.is_dir():
        raise ScaffoldError(f"{root} is not a folder")
    ids = scan_ids(root)
    _check_free(kind, name, ids)
    topic_id = _resolve_topic(topic, ids, root, kind) if kind != "topic" else name
    folder = root / "labs" / name if kind == "lab" else root / name
    if folder.exists():
        raise ScaffoldError(f"{folder} already exists: choose another name, or edit it there")
    schema_path = root / json_schema.SCHEMA_PATH.name
    schema_names = {
        "set": schema_path.name,
        "topic": json_schema.TOPIC_SCHEMA_NAME,
        "lab": json_schema.LAB_SCHEMA_NAME,
    }
    fields = {
        "id": name,
        "title": title_of(name),
        "topic": topic_id,
        "fact": name,
        "schema": _relative(root / schema_names[kind], folder),
    }
    main: tuple[str, Template]
    extra: dict[str, str]
    if kind == "set":
        main, extra = ("set.yaml", templates.SET_YAML), templates.SET_FILES
    elif kind == "topic":
        main = (loader.TOPIC_FILE, templates.TOPIC_YAML)
        extra = {**templates.TOPIC_FILES, "cheatsheet.md": templates.CHEAT_SHEET.substitute(fields)}
    else:
        main, extra = (loader.LAB_FILE, templates.LAB_YAML), templates.LAB_FILES
    folder.mkdir(parents=True)
    written = [folder / main[0]]
    written[0].write_text(main[1].substitute(fields), encoding="utf-8")
    for file_name, text in extra.items():
        (folder / file_name).write_text(text, encoding="utf-8")
        written.append(folder / file_name)
    # Editors read the schema named on the first line: give a new folder its copy.
    if not schema_path.exists():
        written += json_schema.write(schema_path)
    return written
