"""Which course a folder belongs to, so one folder is checked against the whole course.

A set's `topic:`, a topic's `requires:` and an id taken elsewhere are references to the rest of
the course: checked against the named folder alone, a lone set or lab "names no topic.yaml". The
course is the nearest folder, from the one named upward, that holds `challenge-set.schema.json`
(written there by `ranklab schema` and by `ranklab new`); without one, the folder named is a
course of its own. The whole course is loaded and only the named folder's files are reported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from app.challenges import json_schema, loader

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
    if root == path:
        return FolderReport(loader.load_path(path), root)
    everything = loader.load_path(root)
    inside = {str(file) for file in loader.challenge_files(root) if _within(file, path)}
    report = loader.LoadReport(
        sets=[one for one in everything.sets if one.path in inside],
        topics=[one for one in everything.topics if one.path in inside],
        labs=[one for one in everything.labs if one.path in inside],
        errors=[one for one in everything.errors if one.path in inside],
        warnings=[one for one in everything.warnings if one.path in inside],
        files=[one for one in everything.files if one in inside],
    )
    return FolderReport(report, root)


def _within(file: Path, path: Path) -> bool:
    if path.is_file():
        return file.resolve() == path.resolve()
    return file.resolve().is_relative_to(path.resolve())
