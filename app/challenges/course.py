"""Which course a folder belongs to, so one folder is checked against the whole course.

A set's `topic:`, a topic's `requires:` and an id taken elsewhere are references to the rest of
the course: checked against the named folder alone, a lone set or lab "names no topic.yaml". The
course is the nearest folder, from the one named upward, that holds `challenge-set.schema.json`
(written there by `ranklab schema` and by `ranklab new`); without one, the folder named is a
course of its own. Only the named folder's files are reported, and only what they need is
loaded with them: the topic files their `topic:` and `requires:` name (and what those require),
and the other files that could collide with them (the same id, or a `fact:` of theirs). The
other files are only scanned (app.challenges.heads); where a reference is not found by the
scan, the whole course is loaded, so a folder's verdict is always the course's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.challenges import heads, json_schema, loader
from app.verification import proofs

MARKER = json_schema.SCHEMA_PATH.name  # "challenge-set.schema.json"


@dataclass
class FolderReport:
    """What a load found in one folder, its references resolved against its course."""

    report: loader.LoadReport  # the named folder's files only
    course: Path  # the course root the references were resolved against


def root_of(path: Path) -> Path:
    """The course root of a folder or file: the nearest folder at or above it holding the set
    schema, written relative to the working directory when the path was (so errors stay
    clickable), else the folder itself."""
    folder = path if path.is_dir() else path.parent
    absolute = folder.resolve()
    for candidate in (absolute, *absolute.parents):
        if (candidate / MARKER).is_file():
            if candidate == absolute:
                return folder
            return candidate if path.is_absolute() else Path(os.path.relpath(candidate))
    return folder


def load(path: Path) -> FolderReport:
    """Load the course path belongs to and keep what is in path: its valid units, its errors and
    warnings (a reference it makes to a missing topic included; other folders' errors left out)."""
    root = root_of(path)
    known = _known_to_proofs(root)
    if root == path:
        return FolderReport(loader.load_path(path, known=known), root)
    files = loader.challenge_files(root)
    inside_files = [file for file in files if _within(file, path)]
    wanted = _needed(inside_files, [file for file in files if file not in inside_files])
    # In course order: where two files claim one id, the first by path keeps it.
    needed = None if wanted is None else [file for file in files if file in wanted]
    everything = loader.load_path(root, files=needed, known=known)
    inside = {str(file) for file in inside_files}
    if needed is not None and not _closed(everything, inside):
        everything = loader.load_path(
            root, known=known
        )  # the scan missed a reference: judge as the course
    report = loader.LoadReport(
        sets=[one for one in everything.sets if one.path in inside],
        topics=[one for one in everything.topics if one.path in inside],
        labs=[one for one in everything.labs if one.path in inside],
        errors=[one for one in everything.errors if one.path in inside],
        warnings=[one for one in everything.warnings if one.path in inside],
        files=[one for one in everything.files if one in inside],
    )
    return FolderReport(report, root)


def _known_to_proofs(
    root: Path,
) -> Callable[[loader.LoadedSet | loader.LoadedTopic | loader.LoadedLab], int]:
    """How many of a unit's parts the course's proofs file holds proofs of, for their content
    as it is: where two files claim one id, the one it knows best is the shipped file."""
    try:
        file_proofs = proofs.load(root / proofs.FILE_NAME)
    except ValueError:  # a broken proofs file knows nothing (verify and make test say so)
        file_proofs = {}

    def known(unit: loader.LoadedSet | loader.LoadedTopic | loader.LoadedLab) -> int:
        sets = [unit] if isinstance(unit, loader.LoadedSet) else []
        labs = [unit] if isinstance(unit, loader.LoadedLab) else []
        topics = [unit] if isinstance(unit, loader.LoadedTopic) else []
        hashes = proofs.current_hashes(sets, labs, topics)
        return sum(
            key in file_proofs and file_proofs[key].hash == digest for key, digest in hashes.items()
        )

    return known


def _closed(report: loader.LoadReport, inside: set[str]) -> bool:
    """Whether the files loaded hold everything the folder's verdict rests on: the topics its
    sets and labs name, and every topic its topics require, followed through the loaded topics
    (a cycle through the folder passes there). A file the scan misread (a list written in a
    form it does not know) leaves one out, and only the whole course can then tell what is
    wrong (a cycle through a topic left out, a name that does exist)."""
    by_id = {one.topic.id: one.topic for one in report.topics}
    names = set(by_id) | {topic.title.casefold() for topic in by_id.values()}
    named = [one.challenge_set.topic for one in report.sets if not one.challenge_set.own_topic]
    named += [one.lab.topic for one in report.labs if not one.lab.own_topic]
    if not all(name in names or name.casefold() in names for name in named):
        return False
    required = [name for one in report.topics if one.path in inside for name in one.topic.requires]
    seen: set[str] = set()
    while required:
        name = required.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in by_id:
            return False
        required.extend(by_id[name].requires)
    return True


def _within(file: Path, path: Path) -> bool:
    if path.is_file():
        return file.resolve() == path.resolve()
    return file.resolve().is_relative_to(path.resolve())


def _needed(inside: list[Path], outside: list[Path]) -> set[Path] | None:
    """The files to load: the folder's and those it needs; or None: the whole course (a
    reference the scan could not place)."""
    mine = [heads.read(file) for file in inside]
    others = [heads.read(file) for file in outside]
    topics = [head for head in [*mine, *others] if head.path.name == loader.TOPIC_FILE]
    by_name: dict[str, list[heads.Head]] = {}
    for head in topics:
        for name in (head.id, (head.title or "").casefold()):
            if name:
                by_name.setdefault(name, []).append(head)
    if any(head.id is None for head in [*mine, *others]):
        return None  # a file whose id the scan cannot read might collide with anything
    wanted: set[Path] = {head.path for head in mine}
    ids = {head.id for head in mine}
    facts = frozenset().union(*(head.facts for head in mine))
    wanted |= {head.path for head in others if head.id in ids or head.facts & facts}
    for head in mine:
        if head.path.name != loader.TOPIC_FILE and head.topic is not None:
            named = by_name.get(head.topic) or by_name.get(head.topic.casefold())
            if not named:
                return None  # names no topic the scan found: let the full load judge it
            wanted |= {topic.path for topic in named}
    required = [name for head in mine for name in head.requires]
    while required:  # the topics required, and what they require (a cycle may pass by them)
        name = required.pop()
        named = [topic for topic in by_name.get(name, []) if topic.id == name]
        if not named:
            return None
        for topic in named:
            if topic.path not in wanted:
                wanted.add(topic.path)
                required.extend(topic.requires)
    return wanted
