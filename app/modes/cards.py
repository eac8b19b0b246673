"""Flashcard pages: one topic's deck, and every topic's cards in one daily queue (/cards).

A card shows its front; its back (a <details>) holds the grade buttons, each with the interval
FSRS would give it. A grade is accepted only for the card its page showed, as it stood then
(app.modes.shown). The confirmation after a grade says when the card comes back, relative to
now, and offers to undo that grade (the card gets back exactly its state before it).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlmodel import Session

from app.challenges.catalog import Catalog, TopicView
from app.db import run_reads
from app.deps import (
    CatalogDep,
    CsrfDep,
    CurrentUser,
    NowDep,
    OptionalUser,
    SessionDep,
    SettingsDep,
    SlugId,
    learner_or_guest,
    signed_in,
)
from app.errors import Conflict, NotFound
from app.modes import rules, shown
from app.modes import service as modes
from app.progress import zone as zones
from app.review import service as review
from app.review.models import ReviewLog
from app.review.scheduling import CardState, Grade, interval_label, preview, relative

router = APIRouter()
MODE = "flashcards"
# "Study more": each press adds a day's worth of new cards to today's limit (at most this often).
MORE_MAX = 20
GradedId = Annotated[int | None, Query(ge=1, le=2**31 - 1, description="A grade just given.")]
More = Annotated[
    int | None, Query(ge=0, le=MORE_MAX, description="Extra batches of new cards today.")
]
# "Study more" lasts until the learner's day ends: "<batches>.<end of day, Unix seconds>". The
# server checks the end against its own clock (the one tests fake), not the browser's.
MORE_COOKIE = "cards_more"
Back = Literal["topic", "cards"]
# After an undo the page shows that card again first: "<deck>/<card id>".
Undone = Annotated[str | None, Query(max_length=201, description="A card whose grade was undone.")]


def _render(request: Request, template: str, context: dict[str, Any]) -> Response:
    return request.app.state.templates.TemplateResponse(request, template, context)


def _topic(catalog: Catalog, topic_id: str) -> TopicView:
    topic = catalog.topic(topic_id)
    if topic is None:
        raise NotFound(f"No topic {topic_id!r}.")
    if not topic.cards:
        raise NotFound("This topic has no flashcards yet.")
    return topic


def _page_url(back: Back, topic_id: str, **query: object) -> str:
    """The deck a grade or an undo returns to: the topic's, or the daily queue."""
    path = "/cards" if back == "cards" else f"/topics/{topic_id}/flashcards"
    kept = {name: value for name, value in query.items() if value}
    return f"{path}?{urlencode(kept)}" if kept else path


@router.get("/topics/{topic_id}/flashcards", response_class=HTMLResponse)
async def flashcards(
    request: Request,
    topic_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    graded: GradedId = None,
    more: More = None,
    undone: Undone = None,
):
    """The next card: due ones first, then new ones up to the daily limit. Space flips it, keys
    1-4 grade it (Again, Hard, Good, Easy) once flipped."""
    topic = _topic(catalog, topic_id)
    zone = zones.of(request)
    batches = _more(request, more, now, zone)
    limit = settings.new_cards_per_day * (1 + batches)
    if user is not None and user.id is not None:
        deck = await run_reads(session, modes.deck, session, user.id, topic, now, limit, zone)
    else:  # a visitor: every card is new; grading the first signs them in as a guest
        deck = modes.Deck([], list(topic.cards[:limit]), len(topic.cards))
    deck = deck.first(undone)
    context = await _context(request, session, catalog, user, deck, now, graded, batches, "topic")
    context["new_batch"] = settings.new_cards_per_day
    page = _render(request, "flashcards.html", {**context, "topic": topic})
    return _keep_more(page, more, now, zone)


@router.get("/cards", response_class=HTMLResponse)
async def daily_queue(
    request: Request,
    catalog: CatalogDep,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    graded: GradedId = None,
    more: More = None,
    undone: Undone = None,
):
    """Today's cards from every topic: the due ones, then new ones up to the daily limit."""
    assert user.id is not None
    zone = zones.of(request)
    batches = _more(request, more, now, zone)
    limit = settings.new_cards_per_day * (1 + batches)
    queue = modes.daily_queue
    deck = await run_reads(session, queue, session, user.id, catalog, now, limit, zone)
    deck = deck.first(undone)
    context = await _context(request, session, catalog, user, deck, now, graded, batches, "cards")
    context["new_batch"] = settings.new_cards_per_day
    topics = {topic.id: topic for topic in catalog.topics()}
    page = _render(request, "cards.html", {**context, "topics": topics})
    return _keep_more(page, more, now, zone)


@router.get("/cards/count", response_class=HTMLResponse)
async def cards_count(
    request: Request,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
) -> Response:
    """The nav's count of cards due now, as /cards counts them (loaded after the page)."""
    count = 0
    if user is not None and user.id is not None:
        zone = zones.of(request)
        limit = settings.new_cards_per_day
        queue = modes.daily_queue
        deck = await run_reads(session, queue, session, user.id, catalog, now, limit, zone)
        count = len(deck.due)
    return _render(request, "_cards_count.html", {"count": count})


def _more(request: Request, asked: int | None, now: datetime, zone: tzinfo) -> int:
    """Today's extra batches of new cards: the page's own, else those kept until the day ends."""
    if asked is not None:
        return asked
    kept, _, until = request.cookies.get(MORE_COOKIE, "").partition(".")
    if not (kept.isdigit() and until.isdigit()) or now.timestamp() >= int(until):
        return 0  # none asked for, or asked for on a day that is over
    return min(int(kept), MORE_MAX)


def _keep_more(page: Response, asked: int | None, now: datetime, zone: tzinfo) -> Response:
    """Keep the batches a "Study more" link asked for until the learner's midnight."""
    if asked:
        end = rules.end_of_day(now, zone)
        seconds = int((end - now).total_seconds())
        value = f"{asked}.{int(end.timestamp())}"
        page.set_cookie(MORE_COOKIE, value, max_age=seconds, httponly=True, samesite="lax")
    return page


async def _context(
    request: Request,
    session: Session,
    catalog: Catalog,
    user: Any,
    deck: modes.Deck,
    now: datetime,
    graded: int | None,
    more: int,
    back: Back,
) -> dict[str, Any]:
    user_id = user.id if user is not None else None
    secret = request.app.state.settings.secret_key  # the app's Settings (app.main)
    card, confirmation = await run_reads(
        session, _card_and_graded, session, catalog, user_id, deck, now, graded, secret
    )
    return {
        "deck": deck,
        "card": deck.next,
        "shown": card,
        "graded": confirmation,
        "now": now,
        "more": more,
        "more_max": MORE_MAX,
        "back": back,
        "comes_back": _when(deck.comes_back, now),
        "learn_ahead_s": int(modes.CARDS_LEARN_AHEAD.total_seconds()),
    }


def _when(moment: datetime | None, now: datetime) -> dict[str, object] | None:
    """A time for a <time> element: the instant, and in words for pages without JavaScript."""
    return None if moment is None else {"at": moment, "words": relative(moment, now)}


def _card_and_graded(
    session: Session,
    catalog: Catalog,
    user_id: int | None,
    deck: modes.Deck,
    now: datetime,
    graded: int | None,
    secret: str,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The card to show (its grade buttons' intervals and token), and the grade just given."""
    shown_card = None
    entry = deck.next
    if entry is not None:
        stored = modes.card_of(session, user_id, entry) if user_id is not None else None
        state = review.state_of(stored) if stored is not None else CardState.new(now)
        dues = preview(state, now)
        shown_card = {
            "token": shown.token(secret, user_id, entry.deck, entry.item.id, state.last_review),
            "grades": [(grade, interval_label(dues[grade] - now)) for grade in Grade],
        }
    confirmation = None
    log = session.get(ReviewLog, graded) if graded is not None and user_id is not None else None
    if log is not None and log.user_id == user_id and log.mode == MODE:
        found = review.card_by_id(session, log.review_card_id)
        done = catalog.entry(found.deck_id, found.card_id) if found is not None else None
        if found is not None and done is not None:
            confirmation = {
                "entry": done,
                "grade": Grade(log.grade),
                "next": _when(found.due, now),
                "log": log.id,
                "undoable": review.undoable(session, log),
            }
    return shown_card, confirmation


@router.post("/topics/{topic_id}/flashcards/{card_id}/grade", dependencies=[CsrfDep])
def grade_flashcard(
    request: Request,
    topic_id: SlugId,
    card_id: SlugId,
    catalog: CatalogDep,
    user: OptionalUser,
    session: SessionDep,
    settings: SettingsDep,
    now: NowDep,
    grade: Annotated[int, Form(ge=1, le=4, description="1 Again, 2 Hard, 3 Good, 4 Easy.")],
    shown_token: Annotated[
        str, Form(alias="shown", max_length=64, description="The token of the page that showed it.")
    ],
    back: Annotated[Back, Form()] = "topic",
    more: Annotated[int, Form(ge=0, le=MORE_MAX)] = 0,
) -> Response:
    """Grade a card its page showed (FSRS schedules its next review; every review is logged)."""
    topic = _topic(catalog, topic_id)
    entry = catalog.entry(topic.id, card_id)
    if entry is None or not entry.is_card:
        raise NotFound(f"No flashcard {card_id!r}.")
    shown_to = user.id if user is not None else None  # who sent it, before a guest is made
    user, token = learner_or_guest(request, session, user, settings, now)
    assert user.id is not None
    stored = modes.card_of(session, user.id, entry)
    last = stored.last_review if stored is not None else None
    secret = settings.secret_key
    if not shown.matches(shown_token, secret, shown_to, entry.deck, entry.item.id, last):
        raise Conflict(
            "This card was already graded since that page showed it (in another tab?), or no "
            "page showed it to you: nothing was changed. Open the deck again to go on."
        )
    _card, log = review.grade_logged(
        session, user.id, modes.card_key(entry), Grade(grade), MODE, now
    )
    url = _page_url(back, topic.id, graded=log.id, more=more)
    return signed_in(request, RedirectResponse(url, status_code=303), token, settings)


@router.post("/cards/undo", dependencies=[CsrfDep])
def undo_grade(
    user: CurrentUser,
    session: SessionDep,
    log: Annotated[int, Form(ge=1, le=2**31 - 1, description="The grade to undo.")],
    back: Annotated[Back, Form()] = "topic",
    more: Annotated[int, Form(ge=0, le=MORE_MAX)] = 0,
) -> Response:
    """Undo the learner's last flashcard grade: the card is shown again as it was before."""
    assert user.id is not None
    try:
        card = review.undo_last(session, user.id, MODE, log)
    except LookupError as refused:
        raise Conflict(f"{refused} Only your latest grade can be undone.") from None
    undone = f"{card.deck_id}/{card.card_id}"  # shown again first
    url = _page_url(back, card.topic, more=more, undone=undone)
    return RedirectResponse(url, status_code=303)
