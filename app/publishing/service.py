"""The publish gate: which version of each set, topic and lab is served, and why a new one waits.

Each load of the folder is compared with the versions in the database. A unit whose content is
unchanged keeps serving. A changed or new one is published when it validates and everything it
runs is proven for that exact content (app.publishing.gate), or, in the `valid` gate mode (tests,
a local draft course), when it validates. Otherwise it is held, with the reason, and the last
live version keeps serving from the database: a file that stops validating, or that is removed,
takes nothing away. A staff member may publish a held version as unproven; learners see a mark.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.challenges.loader import LoadedLab, LoadedSet, LoadedTopic, LoadReport
from app.db import read_session, utcnow
from app.publishing import versions
from app.publishing.gate import Judgement, judge, unsettled
from app.publishing.models import ContentVersion, VersionStatus
from app.verification import proofs, variant_sets

log = logging.getLogger("ranklab")
GateMode = Literal["proven", "valid"]
Key = tuple[str, str]  # (kind, unit id)


@dataclass
class Served:
    """What one load publishes: the units to serve, their hashes, those published unproven."""

    sets: list[LoadedSet] = field(default_factory=list)
    topics: list[LoadedTopic] = field(default_factory=list)
    labs: list[LoadedLab] = field(default_factory=list)
    hashes: dict[Key, str] = field(default_factory=dict)
    unproven: set[Key] = field(default_factory=set)

    def add(self, unit: versions.Unit, unproven: bool) -> None:
        """Serve one unit."""
        loaded = unit.loaded
        if isinstance(loaded, LoadedSet):
            self.sets.append(loaded)
        elif isinstance(loaded, LoadedTopic):
            self.topics.append(loaded)
        else:
            self.labs.append(loaded)
        self.hashes[(unit.kind, unit.id)] = unit.hash
        if unproven:
            self.unproven.add((unit.kind, unit.id))


@dataclass(frozen=True)
class UnitState:
    """The content page's line about one unit: its live version and its held draft, if any."""

    kind: str
    id: str
    live: ContentVersion | None
    held: ContentVersion | None


class Refused(Exception):
    """A publish that cannot be done (no such held version)."""


@dataclass
class Publisher:
    """Decides and records what is served; one per app, used under the catalog's lock."""

    engine: Engine
    proofs_path: Path
    mode: GateMode = "proven"

    def live_paths(self) -> dict[Key, str]:
        """The file each live version was loaded from, by (kind, id)."""
        with read_session(self.engine) as session:
            rows = session.exec(
                select(ContentVersion).where(ContentVersion.status == VersionStatus.LIVE)
            ).all()
            return {(row.kind, row.unit_id): row.path for row in rows}

    def mark(self) -> tuple[int, datetime | None, int]:
        """What was published, in one cheap query: the live versions' count, latest
        publication and id sum. Any publication, by any process, changes it."""
        with read_session(self.engine) as session:
            count, latest, ids = session.exec(
                select(
                    func.count(), func.max(ContentVersion.published_at),
                    func.coalesce(func.sum(ContentVersion.id), 0),
                ).where(ContentVersion.status == VersionStatus.LIVE)
            ).one()  # fmt: skip
            return int(count), latest, int(ids or 0)

    def live(self, serving: dict[Key, tuple[str, versions.Loaded]]) -> Served:
        """The live versions as the database has them (another process may have published):
        a unit already served (`serving`: key -> hash and unit) is kept as it is."""
        served = Served()
        with read_session(self.engine) as session:
            rows = session.exec(
                select(ContentVersion).where(ContentVersion.status == VersionStatus.LIVE)
            ).all()
            for row in rows:
                kept = serving.get((row.kind, row.unit_id))
                if kept is not None and kept[0] == row.content_hash:
                    unit = versions.unit_of(kept[1])
                else:
                    unit = versions.stored(row.kind, row.path, row.payload)
                served.add(unit, row.unproven)
        return served

    def publish(self, report: LoadReport) -> Served:
        """Record this load's versions and decide what is served."""
        try:
            file_proofs = proofs.load(self.proofs_path)
        except ValueError as error:
            log.error("publish gate: %s; nothing counts as proven by it", error)
            file_proofs = {}
        loaded: list[versions.Loaded] = [*report.sets, *report.topics, *report.labs]
        units = [versions.unit_of(one) for one in loaded]
        for _ in range(3):  # another process may record the same version first: read again
            try:
                return self._publish(units, file_proofs)
            except IntegrityError:
                continue
        return self._publish(units, file_proofs)

    def _publish(self, units: list[versions.Unit], file_proofs: dict[str, proofs.Proof]) -> Served:
        now = utcnow()
        served = Served()
        with Session(self.engine, expire_on_commit=False) as session:
            rows = session.exec(
                select(ContentVersion).where(
                    col(ContentVersion.status).in_([VersionStatus.LIVE, VersionStatus.HELD])
                )
            ).all()
            live = {(r.kind, r.unit_id): r for r in rows if r.status is VersionStatus.LIVE}
            for row in rows:
                if row.status is VersionStatus.HELD:  # a draft the file no longer holds
                    row.status = VersionStatus.SUPERSEDED
            for unit in units:
                key = (unit.kind, unit.id)
                current = live.get(key)
                if current is not None and current.content_hash == unit.hash:
                    current.path = unit.path  # moved unchanged: the same version
                    served.add(unit, current.unproven)
                    continue
                row = self._row(session, unit, now)
                verdict = judge(session, unit.loaded, file_proofs) if self.mode == "proven" else (
                    Judgement(True)
                )  # fmt: skip
                if verdict.proven:
                    if current is not None:
                        current.status = VersionStatus.SUPERSEDED
                    row.status, row.held_reason = VersionStatus.LIVE, None
                    row.published_at, row.unproven, row.published_by = now, False, None
                    live[key] = row
                    served.add(unit, False)
                else:
                    row.status, row.held_reason = VersionStatus.HELD, verdict.reason
            for unit_key, row in live.items():
                if unit_key not in served.hashes:  # its file is broken, refused or gone: it stays
                    served.add(versions.stored(row.kind, row.path, row.payload), row.unproven)
            session.commit()
        return served

    @staticmethod
    def _row(session: Session, unit: versions.Unit, now: datetime) -> ContentVersion:
        """The version's row: found by content hash, else a new one numbered after the last."""
        found = session.exec(
            select(ContentVersion).where(
                ContentVersion.kind == unit.kind,
                ContentVersion.unit_id == unit.id,
                ContentVersion.content_hash == unit.hash,
            )
        ).first()
        if found is not None:
            found.path = unit.path
            return found
        last = session.exec(
            select(func.max(ContentVersion.number)).where(
                ContentVersion.kind == unit.kind, ContentVersion.unit_id == unit.id
            )
        ).one()
        row = ContentVersion(
            kind=unit.kind,
            unit_id=unit.id,
            number=(last or 0) + 1,
            content_hash=unit.hash,
            path=unit.path,
            payload=versions.dump(unit.payload),
            status=VersionStatus.HELD,
            created_at=now,
        )
        session.add(row)
        session.flush()
        return row

    def version(
        self, kind: str, unit_id: str, digest: str
    ) -> tuple[versions.Unit, bool, bool] | None:
        """A stored version by content hash, whether it was published unproven, and whether it
        was ever published (a held draft never was). A reader: a request holding the write
        lock (an answer being judged) may ask."""
        with read_session(self.engine) as session:
            row = session.exec(
                select(ContentVersion).where(
                    ContentVersion.kind == kind,
                    ContentVersion.unit_id == unit_id,
                    ContentVersion.content_hash == digest,
                )
            ).first()
            if row is None:
                return None
            unit = versions.stored(row.kind, row.path, row.payload)
            return unit, row.unproven, row.published_at is not None

    def publish_unproven(self, kind: str, unit_id: str, digest: str, user_id: int) -> None:
        """Publish a held version although its keys are not proven: who and when are kept."""
        with Session(self.engine) as session:
            rows = session.exec(
                select(ContentVersion).where(
                    ContentVersion.kind == kind, ContentVersion.unit_id == unit_id
                )
            ).all()
            target = next((r for r in rows if r.content_hash == digest), None)
            if target is None or target.status is not VersionStatus.HELD:
                raise Refused(f"{kind} {unit_id!r} has no held version {digest[:12]}")
            for row in rows:
                if row.status is VersionStatus.LIVE:
                    row.status = VersionStatus.SUPERSEDED
            target.status, target.unproven = VersionStatus.LIVE, True
            target.published_at, target.published_by = utcnow(), user_id
            session.commit()

    def unproven_items(self, loaded: LoadedSet) -> frozenset[str]:
        """The items of a set whose key or inline proof is not proven for their content: the
        questions of a version published unproven that learners see marked."""
        try:
            file_proofs = proofs.load(self.proofs_path)
        except ValueError:
            file_proofs = {}
        set_id = loaded.challenge_set.id
        owners: dict[str, str] = {}
        for item in loaded.challenge_set.items:
            owners[proofs.item_key(set_id, item.id)] = item.id
            owners[proofs.proof_key(f"set:{set_id}", f"item:{item.id}")] = item.id
        for item in variant_sets.expanded(loaded).challenge_set.items:  # variants: their item's
            owners[proofs.item_key(set_id, item.id)] = variant_sets.base_id(item.id)
        with Session(self.engine) as session:
            keys = unsettled(session, loaded, file_proofs)
        return frozenset(owners[key] for key in keys if key in owners)

    def failures(self, sets: Iterable[LoadedSet]) -> dict[str, str]:
        """The sets served whose latest Verify of their content failed, by file: never shown
        as valid, whatever the gate published."""
        try:
            file_proofs = proofs.load(self.proofs_path)
        except ValueError:
            file_proofs = {}
        found: dict[str, str] = {}
        with Session(self.engine) as session:
            for loaded in sets:
                verdict = judge(session, loaded, file_proofs)
                if verdict.failed and verdict.reason is not None:
                    found[loaded.path] = verdict.reason
        return found

    def states(self) -> list[UnitState]:
        """Every unit with a live or held version, for the content page."""
        with Session(self.engine) as session:
            rows = session.exec(
                select(ContentVersion).where(
                    col(ContentVersion.status).in_([VersionStatus.LIVE, VersionStatus.HELD])
                )
            ).all()
        by_key: dict[Key, dict[str, ContentVersion]] = {}
        for row in rows:
            by_key.setdefault((row.kind, row.unit_id), {})[row.status.value] = row
        return [
            UnitState(kind, unit_id, found.get("live"), found.get("held"))
            for (kind, unit_id), found in sorted(by_key.items())
        ]


def paths_of(states: Iterable[UnitState]) -> dict[str, UnitState]:
    """The states by the file each unit's newest version came from."""
    by_path: dict[str, UnitState] = {}
    for state in states:
        for row in (state.live, state.held):
            if row is not None:
                by_path.setdefault(row.path, state)
    return by_path
