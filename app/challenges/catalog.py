"""The catalog: the challenge sets being served, and the errors of the files that were skipped.

Everything pages look up per request (the sets in order, each set's facts, an item by its id)
is computed once per load, and a reload swaps it all in at once.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from app.challenges import cheatsheet
from app.challenges.loader import LoadedLab, LoadedSet, LoadedTopic, LoadError, load_path
from app.challenges.misconceptions import Misconception
from app.challenges.schema import ChallengeSet, ItemBase
from app.kinds import kind_of

if TYPE_CHECKING:
    from app.publishing.service import Publisher


@dataclass(frozen=True)
class SetFacts:
    """What the home page and a set's page say about a set."""

    set: ChallengeSet
    question_count: int
    total_seconds: float
    difficulty_mix: dict[str, int]

    @classmethod
    def of(cls, challenge_set: ChallengeSet) -> SetFacts:
        """Count a set's questions, total time and questions per difficulty."""
        items = challenge_set.items
        return cls(
            set=challenge_set,
            question_count=len(items),
            total_seconds=sum(item.time_limit for item in items),
            difficulty_mix=dict(Counter(item.difficulty.value for item in items)),
        )


@dataclass(frozen=True)
class Entry:
    """An item or card as the untimed modes address it: by its deck (its set's id, or its
    topic's id for a topic's own items and cards) and its id."""

    topic: str
    deck: str
    item: ItemBase
    code: str | None = None  # the snippet shown with it (run for executable items)

    @property
    def is_card(self) -> bool:
        """Whether this is a flashcard."""
        return kind_of(self.item).is_card

    @property
    def kind(self) -> str:
        """The item's kind."""
        return kind_of(self.item).name


@dataclass(frozen=True)
class TopicView:
    """A topic with everything that belongs to it: its sets, cards, items and cheat sheet.

    A set naming a topic no topic.yaml defines gets a topic of its own with just its sets."""

    id: str
    title: str
    summary: str | None
    order: int
    sets: tuple[SetFacts, ...]
    cards: tuple[Entry, ...]
    practice: tuple[Entry, ...]  # the sets' items, then the topic's own (but explain-it)
    explain: tuple[Entry, ...]
    cheat_sheet: str | None
    path: str | None  # its topic.yaml, if it has one
    labs: tuple[LoadedLab, ...] = ()
    loaded_sets: tuple[LoadedSet, ...] = ()  # its sets as loaded, with their snippets
    loaded_topic: LoadedTopic | None = None  # its topic.yaml as loaded (proofs, claims)
    requires: tuple[str, ...] = ()  # the topics to study first (the course path)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")[:100] or "topic"


def _topics(
    sets: tuple[LoadedSet, ...], loaded: list[LoadedTopic], labs: list[LoadedLab]
) -> dict[str, TopicView]:
    """Every topic, with the sets and labs that name it (by id, or by title whatever the case);
    a name no topic file has makes a topic of its own."""
    by_name = {topic.topic.id: topic for topic in loaded}
    by_name.update({topic.topic.title.casefold(): topic for topic in loaded})
    implicit: dict[str, str] = {}

    def topic_id_of(name: str) -> str:
        found = by_name.get(name) or by_name.get(name.casefold())
        if found is not None:
            return found.topic.id
        implicit.setdefault(_slug(name), name)
        return _slug(name)

    grouped: dict[str, list[LoadedSet]] = {}
    for one in sets:
        grouped.setdefault(topic_id_of(one.challenge_set.topic), []).append(one)
    lab_groups: dict[str, list[LoadedLab]] = {}
    for lab in sorted(labs, key=lambda loaded_lab: loaded_lab.lab.title):
        lab_groups.setdefault(topic_id_of(lab.lab.topic), []).append(lab)
    views: dict[str, TopicView] = {}
    for topic_id, title in implicit.items():
        if all(t.topic.id != topic_id for t in loaded):
            views[topic_id] = _view(topic_id, title, None, grouped.get(topic_id, []),
                                    lab_groups.get(topic_id, []))  # fmt: skip
    for topic in loaded:
        topic_id = topic.topic.id
        views[topic_id] = _view(topic_id, topic.topic.title, topic, grouped.get(topic_id, []),
                                lab_groups.get(topic_id, []))  # fmt: skip
    return dict(sorted(views.items(), key=lambda pair: (pair[1].order, pair[1].title)))


def _view(
    topic_id: str,
    title: str,
    loaded: LoadedTopic | None,
    sets: list[LoadedSet],
    labs: list[LoadedLab],
) -> TopicView:
    set_items = [
        Entry(topic_id, one.challenge_set.id, item, one.code.get(item.id))
        for one in sets
        for item in one.challenge_set.items
    ]
    own = (
        [
            Entry(topic_id, topic_id, item, loaded.item_code.get(item.id))
            for item in loaded.topic.items
        ]
        if loaded
        else []
    )
    return TopicView(
        id=topic_id,
        title=title,
        summary=loaded.topic.summary if loaded else None,
        order=loaded.topic.order if loaded else 1000,
        sets=tuple(SetFacts.of(one.challenge_set) for one in sets),
        cards=tuple(Entry(topic_id, topic_id, card) for card in loaded.topic.cards)
        if loaded
        else (),
        practice=tuple(e for e in set_items + own if e.kind != "explain"),
        explain=tuple(e for e in set_items + own if e.kind == "explain"),
        # Claim markers are for authors and `ranklab content`; learners never see them.
        cheat_sheet=cheatsheet.strip(loaded.cheat_sheet) if loaded and loaded.cheat_sheet else None,
        path=loaded.path if loaded else None,
        labs=tuple(labs),
        loaded_sets=tuple(sets),
        loaded_topic=loaded,
        requires=tuple(loaded.topic.requires) if loaded else (),
    )


@dataclass(frozen=True)
class _Contents:
    """One load of the folder, with its lookups precomputed; replaced whole on reload."""

    sets: dict[str, LoadedSet] = field(default_factory=dict)
    errors: list[LoadError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    ordered: tuple[LoadedSet, ...] = ()
    facts: tuple[SetFacts, ...] = ()
    facts_by_id: dict[str, SetFacts] = field(default_factory=dict)
    items: dict[tuple[str, str], ItemBase] = field(default_factory=dict)
    topics: dict[str, TopicView] = field(default_factory=dict)
    topic_list: tuple[TopicView, ...] = ()  # topics' values, once: pages key caches on it
    entries: dict[tuple[str, str], Entry] = field(default_factory=dict)
    topic_of_set: dict[str, str] = field(default_factory=dict)
    labs: dict[str, LoadedLab] = field(default_factory=dict)
    hashes: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, id) -> version
    unproven: frozenset[tuple[str, str]] = frozenset()  # (kind, id) published unproven
    misconceptions: dict[str, Misconception] = field(default_factory=dict)  # as the files say

    def unit(self, kind: str, unit_id: str) -> LoadedSet | LoadedTopic | LoadedLab | None:
        """The unit served under (kind, id)."""
        if kind == "set":
            return self.sets.get(unit_id)
        if kind == "lab":
            return self.labs.get(unit_id)
        view = self.topics.get(unit_id)
        return view.loaded_topic if view is not None else None

    @classmethod
    def of(
        cls,
        sets: list[LoadedSet],
        errors: list[LoadError],
        files: list[str],
        loaded_topics: list[LoadedTopic] | None = None,
        loaded_labs: list[LoadedLab] | None = None,
        hashes: dict[tuple[str, str], str] | None = None,
        unproven: frozenset[tuple[str, str]] = frozenset(),
        misconceptions: dict[str, Misconception] | None = None,
    ) -> _Contents:
        ordered = tuple(sorted(sets, key=lambda loaded: loaded.challenge_set.title))
        facts = tuple(SetFacts.of(loaded.challenge_set) for loaded in ordered)
        topics = _topics(ordered, loaded_topics or [], loaded_labs or [])
        entries = {
            (entry.deck, entry.item.id): entry
            for topic in topics.values()
            for entry in (*topic.practice, *topic.explain, *topic.cards)
        }
        return cls(
            misconceptions=misconceptions or {},
            hashes=hashes or {},
            unproven=unproven,
            labs={loaded.lab.id: loaded for loaded in loaded_labs or []},
            topics=topics,
            topic_list=tuple(topics.values()),
            entries=entries,
            topic_of_set={
                facts.set.id: topic.id for topic in topics.values() for facts in topic.sets
            },
            sets={loaded.challenge_set.id: loaded for loaded in sets},
            errors=errors,
            files=files,
            ordered=ordered,
            facts=facts,
            facts_by_id={fact.set.id: fact for fact in facts},
            items={
                (loaded.challenge_set.id, item.id): item
                for loaded in sets
                for item in loaded.challenge_set.items
            },
        )


@dataclass
class Catalog:
    """Valid sets by stable id plus the load errors; reloadable without a restart.

    With a publisher (the app's), what is served passes the publish gate (app.publishing) and
    every version served is kept: an attempt asks for the version it started on by hash.
    Without one (the CLI, unit tests), every valid file is served as it is."""

    root: Path
    publisher: Publisher | None = None
    check_every_s: float = 2.0  # how often to look for another process's publication
    _contents: _Contents = field(default_factory=_Contents, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Versions served before, by (kind, id, hash): (the unit, whether published unproven,
    # whether ever published: a held draft is for staff previews only).
    _past: dict[tuple[str, str, str], tuple[object, bool, bool]] = field(
        default_factory=dict, repr=False
    )

    # What was published when this process last looked (Publisher.mark), and when to look next.
    _mark: object = field(default=None, repr=False)
    _next_check: float = field(default=0.0, repr=False)

    @classmethod
    def load(
        cls, root: Path, publisher: Publisher | None = None, check_every_s: float = 2.0
    ) -> Catalog:
        """Load every file under root; broken files are reported and skipped."""
        catalog = cls(root=root, publisher=publisher, check_every_s=check_every_s)
        catalog.reload()
        return catalog

    def check_due(self) -> bool:
        """Whether it is time to look for another process's publication (a clock read)."""
        if self.publisher is None:
            return False
        now = time.monotonic()
        if now < self._next_check:
            return False
        self._next_check = now + self.check_every_s  # one request looks; the others go on
        return True

    def follow(self) -> bool:
        """Serve what another process published since this one last looked (a Reload in one
        of several workers): one small query when nothing was; else the new live versions come
        from the database, and the files are read again for the content page's errors."""
        publisher = self.publisher
        if publisher is None or publisher.mark() == self._mark:
            return False
        with self._lock:
            mark = publisher.mark()  # read first: a publication after it is seen next time
            if mark == self._mark:
                return False
            old = self._contents
            serving = {
                key: (digest, unit)
                for key, digest in old.hashes.items()
                if (unit := old.unit(*key)) is not None
            }
            served = publisher.live(serving)
            live = publisher.live_paths()
            report = load_path(self.root, display_root=self.root.parent, live=live)
            self._keep_past(old)
            self._contents = _Contents.of(
                served.sets, report.errors, report.files, served.topics, served.labs,
                served.hashes, frozenset(served.unproven), report.misconceptions,
            )  # fmt: skip
            self._mark = mark
        return True

    def reload(self) -> None:
        """Read the folder again and swap in the result at once."""
        with self._lock:  # one reload at a time; readers see the old contents or the new
            publisher = self.publisher
            live = publisher.live_paths() if publisher is not None else None
            report = load_path(self.root, display_root=self.root.parent, live=live)
            if publisher is None:
                self._contents = _Contents.of(
                    report.sets, report.errors, report.files, report.topics, report.labs,
                    misconceptions=report.misconceptions,
                )  # fmt: skip
                return
            served = publisher.publish(report)
            self._mark = publisher.mark()
            # It has just looked: the next look is an interval away, not the first request.
            self._next_check = time.monotonic() + self.check_every_s
            self._keep_past(self._contents)
            self._contents = _Contents.of(
                served.sets, report.errors, report.files, served.topics, served.labs,
                served.hashes, frozenset(served.unproven), report.misconceptions,
            )  # fmt: skip

    def _keep_past(self, old: _Contents) -> None:
        """Remember the versions being replaced, for the attempts that started on them."""
        units: list[tuple[str, str, object]] = [
            *(("set", unit_id, loaded) for unit_id, loaded in old.sets.items()),
            *(("lab", unit_id, loaded) for unit_id, loaded in old.labs.items()),
            *(
                ("topic", view.id, view.loaded_topic)
                for view in old.topic_list
                if view.loaded_topic is not None
            ),
        ]
        for kind, unit_id, loaded in units:
            digest = old.hashes.get((kind, unit_id))
            if digest is not None:
                self._past[(kind, unit_id, digest)] = (
                    loaded, (kind, unit_id) in old.unproven, True,
                )  # fmt: skip

    def version_of(self, kind: str, unit_id: str) -> str | None:
        """The content hash of the version served now (None: not versioned, or not served)."""
        return self._contents.hashes.get((kind, unit_id))

    def is_unproven(self, kind: str, unit_id: str, version: str | None = None) -> bool:
        """Whether this version (default: the one served now) was published unproven."""
        contents = self._contents
        if version is None or contents.hashes.get((kind, unit_id)) == version:
            return (kind, unit_id) in contents.unproven
        found = self._stored(kind, unit_id, version)
        return found is not None and found[1]

    def _stored(
        self, kind: str, unit_id: str, version: str, published: bool = False
    ) -> tuple[object, bool, bool] | None:
        """A version served before (or, unless `published`, a held draft), from memory or the
        database."""
        key = (kind, unit_id, version)
        if key not in self._past and self.publisher is not None:
            found = self.publisher.version(kind, unit_id, version)
            if found is not None:
                self._past[key] = (found[0].loaded, found[1], found[2])
        kept = self._past.get(key)
        return None if kept is None or (published and not kept[2]) else kept

    def version_kept(self, kind: str, unit_id: str, version: str | None) -> object | None:
        """A unit as a learner's progress started it: the version by hash if it was ever
        published (a hash from a form may name no draft), else the one served now."""
        contents = self._contents
        if version is None or contents.hashes.get((kind, unit_id)) == version:
            return None
        found = self._stored(kind, unit_id, version, published=True)
        return found[0] if found is not None else None

    def draft_topic(self, topic_id: str, version: str) -> TopicView | None:
        """A topic's version by hash (a held draft, to preview) with the sets and labs that
        name it now; None if no such version is stored."""
        found = self._stored("topic", topic_id, version)
        loaded = found[0] if found is not None else None
        if not isinstance(loaded, LoadedTopic):
            return None
        served = self._contents.topics.get(topic_id)
        sets = list(served.loaded_sets) if served is not None else []
        labs = list(served.labs) if served is not None else []
        return _view(topic_id, loaded.topic.title, loaded, sets, labs)

    def draft_lab(self, lab_id: str, version: str) -> LoadedLab | None:
        """A lab's version by hash (a held draft, to preview); None if no such version."""
        found = self._stored("lab", lab_id, version)
        loaded = found[0] if found is not None else None
        return loaded if isinstance(loaded, LoadedLab) else None

    def deck_version(self, deck: str) -> str | None:
        """The content hash of a deck served now: a set's, or a topic's for its own entries."""
        hashes = self._contents.hashes
        return hashes.get(("set", deck)) or hashes.get(("topic", deck))

    def lab_kept(self, lab_id: str, version: str | None) -> LoadedLab | None:
        """The lab as a learner started it (its version by hash), else the one served now."""
        kept = self.version_kept("lab", lab_id, version)
        return kept if isinstance(kept, LoadedLab) else self._contents.labs.get(lab_id)

    def entry_kept(self, deck: str, item_id: str, version: str | None) -> Entry | None:
        """An item or card of the deck's version a learner was shown (by hash; an open practice
        question or quiz keeps it through a Reload), else of the one served now."""
        contents = self._contents
        served = contents.entries.get((deck, item_id))
        if version is None or version == self.deck_version(deck):
            return served
        kept = self.version_kept("set", deck, version) or self.version_kept("topic", deck, version)
        if isinstance(kept, LoadedSet):
            item = kept.challenge_set.item(item_id)
            topic = contents.topic_of_set.get(deck) or (served.topic if served else None)
            if item is None or topic is None:
                return None
            return Entry(topic, deck, item, kept.code.get(item_id))
        if isinstance(kept, LoadedTopic):
            own = (*kept.topic.items, *kept.topic.cards)
            item = next((one for one in own if one.id == item_id), None)
            return None if item is None else Entry(deck, deck, item, kept.item_code.get(item_id))
        return served

    def set_version(self, set_id: str, version: str | None) -> LoadedSet | None:
        """The set as an attempt started it: its version by hash (None: the one served now)."""
        contents = self._contents
        if version is None or contents.hashes.get(("set", set_id)) == version:
            return contents.sets.get(set_id)
        found = self._stored("set", set_id, version)
        loaded = found[0] if found is not None else None
        return loaded if isinstance(loaded, LoadedSet) else None

    @property
    def sets(self) -> dict[str, LoadedSet]:
        """The valid sets by stable id."""
        return self._contents.sets

    @property
    def misconceptions(self) -> dict[str, Misconception]:
        """The course's misconception catalogue by id (as its file now says)."""
        return self._contents.misconceptions

    def correction_label(self, entry: Misconception) -> str:
        """What corrects a misconception, in the learner's words: "Lesson: <section title>",
        "Flashcards: <topic>" or "Cheat sheet: <topic>"."""
        target = entry.corrected_by
        topic = self.topic(target.topic)
        title = topic.title if topic else target.topic
        lesson = topic.loaded_topic.topic.lesson if topic and topic.loaded_topic else None
        if target.section is not None:
            sections = {one.id: one.title for one in lesson.sections} if lesson else {}
            return f"Lesson ({title}): {sections.get(target.section, target.section)}"
        if target.card is not None:
            return f"Flashcards: {title}"
        return f"Cheat sheet: {title}"

    @property
    def errors(self) -> list[LoadError]:
        """Every problem of the files that were skipped."""
        return self._contents.errors

    @property
    def files(self) -> list[str]:
        """Every challenge file found, valid or not."""
        return self._contents.files

    def ordered(self) -> tuple[LoadedSet, ...]:
        """Return the sets in a stable order (by title)."""
        return self._contents.ordered

    def facts(self) -> tuple[SetFacts, ...]:
        """Return every set's facts, in the order of ordered()."""
        return self._contents.facts

    def facts_of(self, set_id: str) -> SetFacts | None:
        """Return one set's facts, if it is being served."""
        return self._contents.facts_by_id.get(set_id)

    def get(self, set_id: str, version: str | None = None) -> LoadedSet | None:
        """Return the set with this stable id, if it is being served (or the given version)."""
        if version is not None:
            return self.set_version(set_id, version)
        return self._contents.sets.get(set_id)

    def topics(self) -> tuple[TopicView, ...]:
        """Every topic, in order (then by title)."""
        return self._contents.topic_list

    def topic(self, topic_id: str) -> TopicView | None:
        """Return the topic with this id."""
        return self._contents.topics.get(topic_id)

    def topic_of(self, set_id: str) -> TopicView | None:
        """Return the topic a set belongs to."""
        contents = self._contents
        topic_id = contents.topic_of_set.get(set_id)
        return None if topic_id is None else contents.topics.get(topic_id)

    def topic_of_lab(self, lab_id: str) -> TopicView | None:
        """Return the topic a lab belongs to."""
        for topic in self._contents.topics.values():
            if any(loaded.lab.id == lab_id for loaded in topic.labs):
                return topic
        return None

    def lab(self, lab_id: str) -> LoadedLab | None:
        """Return the lab with this id."""
        return self._contents.labs.get(lab_id)

    def entry(self, deck: str, item_id: str) -> Entry | None:
        """Return an item or card by its deck (set or topic id) and id."""
        return self._contents.entries.get((deck, item_id))

    def item(
        self, set_id: str, item_id: str, version: str | None = None
    ) -> tuple[ChallengeSet, ItemBase] | None:
        """Return a set and one of its items by stable ids (of the given version, if any)."""
        if version is not None:
            loaded = self.set_version(set_id, version)
            found = loaded.challenge_set.item(item_id) if loaded is not None else None
            return None if loaded is None or found is None else (loaded.challenge_set, found)
        contents = self._contents  # one snapshot for both lookups
        item = contents.items.get((set_id, item_id))
        return None if item is None else (contents.sets[set_id].challenge_set, item)
