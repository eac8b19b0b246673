"""The topic pages and the untimed modes: practice, flashcards, review, quick quiz, explain-it
and the cheat sheet. Anyone may look; the first answer of a visitor signs them in as a guest
(one click, as the timed challenge's Start does)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, tzinfo
from functools import partial
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlmodel import Session

from app import reads
from app.attempts import rules, sightings
from app.attempts import service as attempts
from app.attempts.rules import ItemStatus
from app.challenges.catalog import Catalog, Entry, TopicView
from app.classes import reports as classes
from app.config import Settings
from app.db import begin_write, run_reads, run_writes
from app.deps import (
    CatalogDep,
    CsrfDep,
    CurrentUser,
    NowDep,
    OptionalUser,
    RowId,
    SessionDep,
    SettingsDep,
    SlugId,
    learner_or_guest,
    signed_in,
)
from app.errors import BadRequest, Conflict, NotFound
from app.kinds import kind_of, order
from app.modes import MODES
from app.modes import service as modes
from app.modes.models import ModeAnswer
from app.progress import zone as zones
from app.review import service as review

router = APIRouter()
AnswerField = Annotated[list[str] | None, Form()]
LastId = Annotated[int | None, Query(ge=1, le=2**31 - 1, description="An answer to show.")]
# The content hash of the deck's version a question was shown from: it is judged by that version
# though a Reload publishes another meanwhile (as a timed attempt keeps its set's version).
VERSION_PATTERN = "^[0-9a-f]{64}$"
ShownVersion = Annotated[
    str | None, Query(pattern=VERSION_PATTERN, description="The version it was shown from.")
]
AnsweredVersion = Annotated[str | None, Form(pattern=VERSION_PATTERN)]
# The variant of a parameterised item a page showed (app.attempts.sightings): "" or 12 hex.
KEY_PATTERN = "^([0-9a-f]{12})?$"
ShownKey = Annotated[str | None, Query(pattern=KEY_PATTERN, description="The variant shown.")]
AnsweredKey = Annotated[str | None, Form(pattern=KEY_PATTERN)]


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _render(request: Request, template: str, context: dict[str, Any]) -> Response:
    return request.app.state.templates.TemplateResponse(request, template, context)


def _topic(catalog: Catalog, topic_id: str) -> TopicView:
    topic = catalog.topic(topic_id)
    if topic is None:
        raise NotFound(f"No topic {topic_id!r}.")
    return topic


def _kept(catalog: Catalog, topic: TopicView, deck: str, item_id: str, version: str | None):
    """The entry of the deck's version the learner was shown (else the one served now), and
    that version's hash to keep showing and judging it by."""
    entry = catalog.entry_kept(deck, item_id, version)
    if entry is None or entry.topic != topic.id:
        raise NotFound(f"No item {item_id!r} in {deck!r}.")
    return entry, version or catalog.deck_version(deck)


def _keep(version: str | None) -> str:
    """The query that keeps a page on its version ("" when unversioned)."""
    return f"&v={version}" if version else ""


def _parse(entry: Entry, choice: list[str] | None, seed: str | None) -> str:
    """The answer to `entry` as stored; `seed` is the one its page was shown with (_seed)."""
    answer = rules.parse_answer(entry.item, choice or [], seed)
    if answer is None:
        raise BadRequest(rules.Refusal.INVALID.value)
    return answer


def _view(
    entry: Entry, answer: ModeAnswer | None, reveal: bool, hinted: bool, seed: str | None = None
) -> dict[str, Any]:
    """The public view of an entry after `answer` (or none): closed once right or revealed;
    its options in the order `seed` gives (_seed)."""
    if answer is not None and answer.correct:
        status = ItemStatus.CORRECT
    elif reveal:
        status = ItemStatus.INCORRECT
    else:
        status = ItemStatus.OPEN
    # An explain-it answer is scored as soon as it is given (right or not): it is closed.
    if answer is not None and entry.kind == "explain":
        status = ItemStatus.CORRECT if answer.correct else ItemStatus.INCORRECT
    last = answer.answer if answer is not None else None
    return rules.public_question(entry.item, status, last, 0, 0, hinted, seed)


def _seed(settings: Settings, mode: str, *ids: object) -> str:
    """The order seed of an untimed showing (app.kinds.order): per learner (practice, review) or
    per quiz, so that a reload shows the same order."""
    return order.seed(settings.secret_key, mode, *ids)


def _as_shown(entry: Entry, key: str) -> Entry:
    """The entry as its variant `key` shows it ("": as written): its texts and its snippet."""
    if not key:
        return entry
    item = sightings.shown_item(entry.item, key)
    code = getattr(item, "code", None)
    return replace(entry, item=item, code=code if isinstance(code, str) else entry.code)


def _offer(settings: Settings, catalog: Catalog, entry: Entry) -> sightings.Offer:
    """The variants of the entry's item a learner may be shown (the proven ones)."""
    return sightings.offer_for(settings, catalog.get(entry.deck))


def _offered(entry: Entry, key: str | None, offer: sightings.Offer) -> str | None:
    """The variant a page or form names, checked: one the learner may be shown (400 if not)."""
    if key is None:
        return None
    if sightings.valid_key(entry.item, key, offer) is None:
        raise BadRequest("That version of the question is not offered.")
    return key


def _pinned(
    session: Session,
    catalog: Catalog,
    settings: Settings,
    user_id: int | None,
    entry: Entry,
    mode: str,
    since: datetime | None,
    *showing: object,
) -> str:
    """The variant an untimed showing pins (sightings.pin), seeded by what names the showing."""
    seed = _seed(settings, "variant", user_id, entry.deck, entry.item.id, since, *showing)
    offer = _offer(settings, catalog, entry)
    return sightings.pin(
        session.connection(), user_id, entry.deck, entry.item, mode, since, seed, offer
    )


def _sighted(
    session: Session, user_id: int, entry: Entry, key: str, mode: str, now: datetime
) -> None:
    """Record that a page showed the learner this variant (the first time counts)."""
    if entry.is_card:
        return  # a flashcard is no set's question
    begin_write(session)
    sightings.record(session.connection(), user_id, entry.deck, entry.item.id, key, mode, now)
    session.commit()


def _owned_answer(session: Session, answer_id: int | None, user_id: int | None, entry: Entry):
    if answer_id is None or user_id is None:
        return None
    row = session.get(ModeAnswer, answer_id)
    if row is None or row.user_id != user_id or row.item_id != entry.item.id:
        return None
    return row


# Topics --------------------------------------------------------------------------------------


@router.get("/topics", response_class=HTMLResponse)
def topics_index() -> Response:
    """The topics are the home page."""
    return _redirect("/")


@router.get("/topics/{topic_id}", response_class=HTMLResponse)
async def topic_page(
    request: Request,
    topic_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
):
    """A topic: what it covers, its sets, and the mode picker with the learner's state in each."""
    topic = _topic(catalog, topic_id)
    progress = None
    if user is not None and user.id is not None:
        progress = await run_reads(
            session,
            _progress,
            session,
            user.id,
            topic,
            now,
            settings.new_cards_per_day,
            zones.of(request),
            catalog,
        )
    dues: dict[str, classes.Due] = {}
    if user is not None and user.id is not None:
        engine = request.app.state.engine
        dues = await reads.read(engine, classes.dues, user.id, now, zones.of(request))
    picker = [
        {"mode": mode, "href": mode.href(topic), "state": mode.state(topic, progress)}
        for mode in MODES
        if mode.offered(topic)
    ]
    return _render(
        request,
        "topic.html",
        {
            "topic": topic,
            "picker": picker,
            "standing": progress.sets if progress else {},
            "due": classes.by_topic(dues, catalog).get(topic.id),
        },
    )


def _progress(
    session: Session,
    user_id: int,
    topic: TopicView,
    now: datetime,
    new_per_day: int,
    zone: tzinfo,
    catalog: Catalog,
) -> modes.TopicProgress:
    standings = attempts.standings(reads.Reader.within(session), user_id)
    return modes.topic_progress(session, user_id, topic, now, new_per_day, standings, catalog, zone)


# Practice ------------------------------------------------------------------------------------


@router.get("/topics/{topic_id}/practice")
async def practice_start(
    topic_id: SlugId, catalog: CatalogDep, user: OptionalUser, session: SessionDep
) -> Response:
    """Go to the first question not yet answered right in practice (or the first)."""
    topic = _topic(catalog, topic_id)
    if not topic.practice:
        raise NotFound("This topic has no practice questions yet.")
    done: set[tuple[str, str]] = set()
    if user is not None and user.id is not None:
        done = await run_reads(session, modes.right_in_practice, session, user.id, topic.id)
    entry = next((e for e in topic.practice if (e.deck, e.item.id) not in done), topic.practice[0])
    return _redirect(f"/topics/{topic.id}/practice/{entry.deck}/{entry.item.id}")


@router.get("/topics/{topic_id}/practice/{deck}/{item_id}", response_class=HTMLResponse)
async def practice_item(
    request: Request,
    topic_id: SlugId,
    deck: SlugId,
    item_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    last: LastId = None,
    reveal: bool = False,
    hint: bool = False,
    v: ShownVersion = None,
    k: ShownKey = None,
):
    """One practice question: untimed, answer as often as you like, feedback after each try.
    A parameterised item shows a variant not yet shown to the learner, kept (`k`) until
    answered."""
    topic = _topic(catalog, topic_id)
    entry, version = _kept(catalog, topic, deck, item_id, v)
    places = [(e.deck, e.item.id) for e in topic.practice]
    if entry.kind == "explain" or entry.is_card or ((deck, item_id) not in places and not v):
        raise NotFound("That item is not a practice question.")
    user_id = user.id if user else None
    key = _offered(entry, k, _offer(settings, catalog, entry))
    if key is None:
        pin = _practice_pin
        key = await run_reads(session, pin, session, catalog, settings, user_id, entry)
    if user_id is not None:  # shown now: a visitor's first answer records it
        await run_writes(session, _sighted, session, user_id, entry, key, "practice", now)
    entry = _as_shown(entry, key)
    answer = await run_reads(session, _owned_answer, session, last, user_id, entry)
    # An item the new version dropped stays answerable from its page; it has no place now.
    index = places.index((deck, item_id)) if (deck, item_id) in places else 0
    here = f"/topics/{topic.id}/practice/{entry.deck}/{entry.item.id}"
    hinted = hint or bool(answer and answer.hinted)
    return _render(
        request,
        "practice.html",
        {
            "topic": topic,
            "entry": entry,
            # A visitor's first answer makes them a guest learner, with an order of their own.
            "q": _view(
                entry, answer, reveal, hinted, _seed(settings, "practice", user and user.id)
            ),
            "code": entry.code,
            "hinted": hinted,
            "action": here + "/answer",
            "here": here,
            "keep": _keep(version) + (f"&k={key}" if key else ""),
            "version": version,
            "fields": {**({"version": version} if version else {}), "variant": key},
            "answer": answer,
            "position": index,
            "count": len(topic.practice),
            "previous": topic.practice[index - 1] if index > 0 else None,
            "following": topic.practice[index + 1] if index + 1 < len(topic.practice) else None,
        },
    )


@router.post("/topics/{topic_id}/practice/{deck}/{item_id}/answer", dependencies=[CsrfDep])
def practice_answer(
    request: Request,
    topic_id: SlugId,
    deck: SlugId,
    item_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    choice: AnswerField = None,
    hinted: Annotated[bool, Form()] = False,
    version: AnsweredVersion = None,
    variant: AnsweredKey = None,
) -> Response:
    """Judge a practice answer by the version and variant its page showed; it never touches
    badges or totals, and feeds review."""
    topic = _topic(catalog, topic_id)
    entry, version = _kept(catalog, topic, deck, item_id, version)
    key = _offered(entry, variant, _offer(settings, catalog, entry))
    if key is None:  # a form without it: the variant its page would have pinned
        key = _practice_pin(session, catalog, settings, user.id if user else None, entry)
    entry = _as_shown(entry, key)
    # Read with the seed the page was shown with: a visitor's, before they become a guest.
    answer = _parse(entry, choice, _seed(settings, "practice", user and user.id))
    user, token = learner_or_guest(request, session, user, settings, now)
    assert user.id is not None
    correct = rules.is_correct(entry.item, answer)
    row = modes.record_answer(
        session, user.id, entry, "practice", answer, correct, now, hinted, variant_key=key
    )
    query = urlencode({"last": row.id, **({"hint": 1} if hinted else {})}) + _keep(version)
    query += f"&k={key}" if key else ""
    url = f"/topics/{topic.id}/practice/{entry.deck}/{entry.item.id}?{query}"
    return signed_in(request, _redirect(url), token, settings)


def _practice_pin(
    session: Session, catalog: Catalog, settings: Settings, user_id: int | None, entry: Entry
) -> str:
    """Practice's variant of an item: pinned until the learner's next practice answer to it."""
    since = modes.last_answered(session, user_id, entry, "practice") if user_id else None
    return _pinned(session, catalog, settings, user_id, entry, "practice", since)


# Review mistakes -----------------------------------------------------------------------------


@router.get("/review", response_class=HTMLResponse)
async def review_page(
    request: Request,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    now: NowDep,
    settings: SettingsDep,
    last: LastId = None,
    topic: Annotated[str | None, Query(max_length=100)] = None,
    v: ShownVersion = None,
    k: ShownKey = None,
    gone: bool = False,
):
    """The learner's due mistakes across topics (or one topic), one at a time. Each question
    carries its deck's version, so a Reload meanwhile neither changes its key nor loses it."""
    assert user.id is not None
    seed = _seed(settings, "review", user.id)
    zone = zones.of(request)
    state = await run_reads(
        session, _review_state, session, catalog, settings, user.id, now, zone, last, topic, seed,
        v, k,
    )  # fmt: skip
    per_topic: dict[str, int] = {}
    for entry in state.queue:
        per_topic[entry.topic] = per_topic.get(entry.topic, 0) + 1
    current = state.queue[0] if state.queue else None
    version = catalog.deck_version(current.deck) if current else None
    extra: dict[str, str] = {"version": version} if version else {}  # unversioned: none
    if current is not None:
        extra["variant"] = state.key
        await run_writes(session, _sighted, session, user.id, current, state.key, "review", now)
        current = _as_shown(current, state.key)
    return _render(
        request,
        "review.html",
        {
            "queue": state.queue,
            "per_topic": per_topic,
            "topics": {t.id: t for t in catalog.topics()},
            "current": current,
            "q": _view(current, None, reveal=False, hinted=False, seed=seed) if current else None,
            "fields": {**extra, **({"topic": topic} if topic else {})},
            "shown": state.shown,
            "filter": topic,
            "next_due": state.upcoming,
            "skipped": state.skipped,
            "gone": gone,
        },
    )


@dataclass(frozen=True)
class _ReviewState:
    """The due queue, the answer just given (with its card), when the next card falls due if
    none is due now, and how many due cards were skipped (gone from the course)."""

    queue: list[Entry]
    shown: dict[str, Any] | None
    upcoming: datetime | None
    skipped: int
    key: str = ""  # the variant the first due question shows


def _review_state(
    session: Session,
    catalog: Catalog,
    settings: Settings,
    user_id: int,
    now: datetime,
    zone: tzinfo,
    last: int | None,
    topic: str | None,
    seed: str,
    version: str | None,
    key: str | None,
) -> _ReviewState:
    """Read the Review page's state; the answer just given is shown by the version it was
    judged by (`version`), though a Reload published another since."""
    queue, skipped = modes.review_due(session, user_id, now, catalog, zone=zone)
    if topic is not None:
        queue = [entry for entry in queue if entry.topic == topic]
    shown = None
    row = session.get(ModeAnswer, last) if last is not None else None
    entry = None
    if row is not None and row.user_id == user_id:
        entry = catalog.entry_kept(row.deck_id, row.item_id, version)
    if row is not None and entry is not None:
        card = modes.card_of(session, user_id, entry)
        offer = _offer(settings, catalog, entry)
        entry = _as_shown(entry, _offered(entry, key, offer) or "")  # the variant answered
        shown = {"entry": entry, "answer": row, "card": card,
                 "q": _view(entry, row, reveal=True, hinted=False, seed=seed)}  # fmt: skip
        queue = [e for e in queue if (e.deck, e.item.id) != (entry.deck, entry.item.id)]
    upcoming = None
    if not queue:
        later = review.due_cards(session, user_id, now + timedelta(days=36500), limit=1)
        upcoming = later[0].due if later else None
    pinned = _review_pin(session, catalog, settings, user_id, queue[0]) if queue else ""
    return _ReviewState(queue, shown, upcoming, skipped, pinned)


def _review_pin(
    session: Session, catalog: Catalog, settings: Settings, user_id: int, entry: Entry
) -> str:
    """Review's variant of an item: pinned until the learner's next review of it."""
    card = modes.card_of(session, user_id, entry)
    since = (card.last_review or card.created_at) if card is not None else None
    return _pinned(session, catalog, settings, user_id, entry, "review", since)


@router.get("/review/count", response_class=HTMLResponse)
async def review_count(
    request: Request, catalog: CatalogDep, user: OptionalUser, session: SessionDep, now: NowDep
) -> Response:
    """The nav's count of due mistakes (loaded after the page, so pages stay fast)."""
    count = 0
    if user is not None and user.id is not None:
        queue_in_zone = partial(modes.review_queue, zone=zones.of(request))
        queue = await run_reads(session, queue_in_zone, session, user.id, now, catalog)
        count = len(queue)
    return _render(request, "_review_count.html", {"count": count})


@router.post("/review/{deck}/{item_id}/answer", dependencies=[CsrfDep])
def review_answer(
    deck: SlugId,
    item_id: SlugId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    choice: AnswerField = None,
    topic: Annotated[str | None, Form(max_length=100)] = None,
    version: AnsweredVersion = None,
    variant: AnsweredKey = None,
) -> Response:
    """Answer a due mistake by the version its page showed: right moves it on (Good), wrong
    brings it back soon (Again). One no longer in the course is skipped, with a word."""
    assert user.id is not None
    entry = catalog.entry_kept(deck, item_id, version)
    back = {"topic": topic} if topic else {}
    if entry is None:  # its set or topic is gone, and no version of it was shown
        return _redirect(f"/review?{urlencode({**back, 'gone': 1})}")
    key = _offered(entry, variant, _offer(settings, catalog, entry))
    if key is None:  # a form without it: the variant its page pinned
        key = _review_pin(session, catalog, settings, user.id, entry)
    entry = _as_shown(entry, key)
    answer = _parse(entry, choice, _seed(settings, "review", user.id))
    correct = rules.is_correct(entry.item, answer)
    row = modes.record_answer(
        session, user.id, entry, "review", answer, correct, now, variant_key=key
    )
    kept = version or catalog.deck_version(deck)
    query = {"last": row.id, **back, **({"v": kept} if kept else {}), **({"k": key} if key else {})}
    return _redirect(f"/review?{urlencode(query)}")


# Quick quiz ----------------------------------------------------------------------------------


@router.get("/topics/{topic_id}/quiz", response_class=HTMLResponse)
def quiz_intro(request: Request, topic_id: SlugId, catalog: CatalogDep):
    """What a quick quiz is, and a button to start one."""
    topic = _topic(catalog, topic_id)
    pool = len(topic.practice) + len(topic.cards)
    size = min(pool, modes.QUIZ_MAX)
    return _render(request, "quiz_intro.html", {"topic": topic, "size": size})


@router.post("/topics/{topic_id}/quiz", dependencies=[CsrfDep])
def quiz_start(
    request: Request,
    topic_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
) -> Response:
    """Draw a new quiz from the topic's items and cards."""
    topic = _topic(catalog, topic_id)
    user, token = learner_or_guest(request, session, user, settings, now)
    assert user.id is not None
    decks = {entry.deck for entry in (*topic.practice, *topic.cards)}
    versions = {deck: catalog.deck_version(deck) for deck in decks}
    quiz = modes.start_quiz(session, user.id, topic, now, random.Random(), versions)
    return signed_in(request, _redirect(f"/quizzes/{quiz.id}"), token, settings)


@router.get("/quizzes/{quiz_id}", response_class=HTMLResponse)
async def quiz_page(
    request: Request,
    quiz_id: RowId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    show: Annotated[int | None, Query(ge=1, le=100)] = None,
):
    """The current question of a quiz, an answered one (?show=N) with its feedback, or the
    score once every question is answered."""
    assert user.id is not None
    state = await run_reads(session, modes.quiz_for_user, session, quiz_id, user.id)
    topic = catalog.topic(state.quiz.topic)
    found = modes.entries_of(catalog, state.questions, state.versions)
    keys = await run_reads(session, _quiz_pins, session, catalog, settings, state, found)
    entries = [_as_shown(e, key) if e else None for e, key in zip(found, keys, strict=True)]
    seed = _seed(settings, "quiz", quiz_id, user.id)
    position = state.current if show is None else show - 1
    if position < len(entries) and (shown := found[position]) is not None:
        key = keys[position]
        await run_writes(session, _sighted, session, user.id, shown, key, "quiz", now)
    if position >= len(state.questions):
        reviews = []
        for index, entry in enumerate(entries):
            row = state.answers.get(index)
            q = _view(entry, row, reveal=True, hinted=False, seed=seed) if entry else None
            reviews.append({"entry": entry, "answer": row, "q": q})
        return _render(
            request, "quiz_results.html", {"state": state, "topic": topic, "reviews": reviews}
        )
    entry = entries[position]
    answered = state.answers.get(position)
    return _render(
        request,
        "quiz.html",
        {
            "state": state,
            "topic": topic,
            "entry": entry,
            "position": position,
            "answered": answered,
            "q": _view(entry, answered, reveal=answered is not None, hinted=False, seed=seed)
            if entry is not None
            else None,
            "code": entry.code if entry else None,
        },
    )


@router.post("/quizzes/{quiz_id}/q/{number}/answer", dependencies=[CsrfDep])
def quiz_answer(
    quiz_id: RowId,
    number: RowId,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    choice: AnswerField = None,
) -> Response:
    """Answer a quiz question once; the page then shows whether it was right and why."""
    assert user.id is not None
    state = modes.quiz_for_user(session, quiz_id, user.id)
    position = number - 1
    if position >= len(state.questions):
        raise NotFound("The quiz has no such question.")
    if position in state.answers:
        raise Conflict("This question is already answered.")
    found = modes.entries_of(catalog, state.questions, state.versions)
    entry = found[position]
    if entry is None:  # removed from the course since the quiz began: counts as skipped
        raise NotFound("This question is no longer available.")
    key = _quiz_pins(session, catalog, settings, state, found)[position]
    _sighted(session, user.id, entry, key, "quiz", now)
    entry = _as_shown(entry, key)  # the variant its page showed
    answer = _parse(entry, choice, _seed(settings, "quiz", quiz_id, user.id))
    correct = rules.is_correct(entry.item, answer)
    modes.answer_quiz(session, state, position, entry, answer, correct, now)
    return _redirect(f"/quizzes/{quiz_id}?show={number}")


def _quiz_pins(
    session: Session,
    catalog: Catalog,
    settings: Settings,
    state: modes.QuizState,
    entries: list[Entry | None],
) -> list[str]:
    """The variant each quiz question shows: pinned by the quiz and the question's place."""
    quiz, since = state.quiz, state.quiz.created_at
    return [
        _pinned(session, catalog, settings, quiz.user_id, entry, "quiz", since, quiz.id, position)
        if entry is not None
        else ""
        for position, entry in enumerate(entries)
    ]


# Explain it ----------------------------------------------------------------------------------


@router.get("/topics/{topic_id}/explain", response_class=HTMLResponse)
async def explain_list(
    request: Request, topic_id: SlugId, catalog: CatalogDep, user: OptionalUser, session: SessionDep
):
    """The topic's explain-it items with the learner's best score on each."""
    topic = _topic(catalog, topic_id)
    best: dict[str, int] = {}
    if user is not None and user.id is not None:
        best = await run_reads(session, modes.explain_best, session, user.id, topic.id)
    return _render(request, "explain_list.html", {"topic": topic, "best": best})


@router.get("/topics/{topic_id}/explain/{item_id}", response_class=HTMLResponse)
async def explain_item(
    request: Request,
    topic_id: SlugId,
    item_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    last: LastId = None,
    v: ShownVersion = None,
):
    """Write an explanation; once sent: concepts covered, the sentences that covered them and
    the model answer (of the version it was written for)."""
    topic = _topic(catalog, topic_id)
    entry, version = _explain_entry(catalog, topic, item_id, v)
    answer = await run_reads(
        session, _owned_answer, session, last, user.id if user else None, entry
    )
    here = f"/topics/{topic.id}/explain/{item_id}"
    return _render(
        request,
        "explain.html",
        {
            "topic": topic,
            "entry": entry,
            "q": _view(entry, answer, reveal=False, hinted=False),
            "answer": answer,
            "action": here + "/answer",
            "here": here,
            "version": version,
        },
    )


@router.post("/topics/{topic_id}/explain/{item_id}/answer", dependencies=[CsrfDep])
def explain_answer(
    request: Request,
    topic_id: SlugId,
    item_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    choice: AnswerField = None,
    version: AnsweredVersion = None,
) -> Response:
    """Score an explanation against the key concepts of the version it was written for, and
    keep it."""
    topic = _topic(catalog, topic_id)
    entry, version = _explain_entry(catalog, topic, item_id, version)
    answer = _parse(entry, choice, None)  # a text: no options, no order
    matches = entry.item.score(answer)  # type: ignore[attr-defined]
    covered = sum(match.covered for match in matches)
    correct = kind_of(entry.item).is_correct(entry.item, answer)
    user, token = learner_or_guest(request, session, user, settings, now)
    assert user.id is not None
    row = modes.record_answer(
        session, user.id, entry, "explain", answer, correct, now, points=covered
    )
    url = f"/topics/{topic.id}/explain/{item_id}?{urlencode({'last': row.id})}{_keep(version)}"
    return signed_in(request, _redirect(url), token, settings)


def _explain_entry(
    catalog: Catalog, topic: TopicView, item_id: str, version: str | None
) -> tuple[Entry, str | None]:
    """An explain-it item of the topic, of the version it was shown from."""
    served = next((e for e in topic.explain if e.item.id == item_id), None)
    if served is None:
        raise NotFound(f"No explain-it item {item_id!r} in this topic.")
    entry, version = _kept(catalog, topic, served.deck, item_id, version)
    if entry.kind != "explain":
        raise NotFound(f"No explain-it item {item_id!r} in this topic.")
    return entry, version


# Cheat sheet ---------------------------------------------------------------------------------


@router.get("/topics/{topic_id}/cheatsheet", response_class=HTMLResponse)
def cheatsheet(request: Request, topic_id: SlugId, catalog: CatalogDep):
    """The topic on one page, made for printing (A4)."""
    topic = _topic(catalog, topic_id)
    if topic.cheat_sheet is None:
        raise NotFound("This topic has no cheat sheet yet.")
    return _render(request, "cheatsheet.html", {"topic": topic})
