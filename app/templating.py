"""Jinja2 set-up: Markdown (raw HTML disabled) and server-side syntax highlighting (Pygments)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates
from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader, pass_context
from jinja2.runtime import Context
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import OptionsDict
from markupsafe import Markup
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from app import static_assets
from app.challenges import content_checks, outcome_text
from app.icons import icon
from app.progress import zone as zones

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "templates"
KINDS_DIR = Path(__file__).resolve().parent / "kinds"
_FORMATTER = HtmlFormatter(cssclass="highlight", wrapcode=True)
# Inside Markdown, markdown-it wraps a highlighter's output in its own <pre><code> unless the
# output is a <pre> already: a nested <pre> left a blank band under every code block.
_SPANS_ONLY = HtmlFormatter(nowrap=True)


@lru_cache(maxsize=1024)
def highlight(code: str, language: str = "python") -> Markup:
    """Return code as highlighted HTML (Pygments escapes it); each snippet is highlighted once."""
    try:
        lexer = get_lexer_by_name(language) if language else PythonLexer()
    except ClassNotFound:
        lexer = PythonLexer()
    # tabindex: a snippet wider than a phone scrolls, and keyboard users must reach it (WCAG
    # 2.1.1). Pygments escapes the code, so the first <pre> is its own.
    html = pygments_highlight(code, lexer, _FORMATTER)
    return Markup(html.replace("<pre>", '<pre tabindex="0">', 1))


def _fenced(code: str, language: str) -> str:
    """A fenced code block in Markdown: one <pre class="highlight"> holding the spans."""
    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        lexer = PythonLexer()
    spans = pygments_highlight(code, lexer, _SPANS_ONLY)
    return f'<pre class="highlight" tabindex="0"><code>{spans}</code></pre>\n'


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    # "js-default" turns raw HTML off: challenge text can never inject markup or scripts.
    parser = MarkdownIt(
        "js-default",
        {"highlight": lambda code, lang, _attrs: _fenced(code, lang or "python")},
    ).enable("table")
    parser.add_render_rule("image", _local_image_only)
    return parser


def _local_image_only(
    renderer: RendererHTML, tokens: Sequence[Token], index: int, options: OptionsDict, env: Any
) -> str:
    """Render an image from this site; one from another site becomes a link to it.

    `ranklab validate` refuses such images (app.challenges.content_checks); this is the second
    line: the page never makes a learner's browser fetch from a third party (nor would the CSP).
    """
    token = tokens[index]
    source = str(token.attrGet("src") or "")
    if not content_checks.is_external_url(source):
        return renderer.image(tokens, index, options, env)
    text = renderer.renderInlineAsText(token.children, options, env) or source
    return f'<a href="{escapeHtml(source)}" rel="nofollow noreferrer">{escapeHtml(text)}</a>'


def markdown(text: str | None) -> Markup:
    """Render Markdown to safe HTML."""
    return Markup(_markdown().render(text or ""))


def markdown_inline(text: str | None) -> Markup:
    """Render one line of Markdown (a title) to safe HTML without a paragraph around it:
    `code` and **bold** as they are meant, never raw backticks."""
    return Markup(_markdown().renderInline(text or ""))


# What pages render: markdown() is a pure function of the text, so a page view reuses the HTML
# of the last view of the same text (bounded: a content reload adds texts, old ones age out).
_markdown_once = lru_cache(maxsize=4096)(markdown)


def duration(seconds: float | timedelta | None) -> str:
    """Format seconds as m:ss (or h:mm:ss)."""
    if seconds is None:
        return "untimed"
    total = int(seconds.total_seconds() if isinstance(seconds, timedelta) else seconds)
    hours, rest = divmod(max(total, 0), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def when(moment: datetime | str | None, zone: tzinfo = UTC) -> str:
    """Format a time for people, in their zone: "Sat 28 Nov 2026, 19:30 PST".

    A string is an ISO 8601 time, as the executor writes `observed_at`; one that is not is
    shown as it is."""
    if moment is None:
        return ""
    if isinstance(moment, str):
        try:
            moment = datetime.fromisoformat(moment)
        except ValueError:
            return str(moment)
    if moment.tzinfo is None:  # SQLite hands back naive datetimes: they are UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(zone).strftime("%a %d %b %Y, %H:%M %Z")


@pass_context
def _when_for_learner(context: Context, moment: datetime | str | None) -> str:
    # The zone the learner's browser named (its tz cookie, app.progress.zone); UTC if unknown.
    request = context.get("request")
    return when(moment, zones.of(request) if request is not None else UTC)


def counted(count: int, noun: str) -> str:
    """A count with its noun in words: "1 rank", "2 ranks" (never "2 rank(s)")."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def accommodated(seconds: float | None, user: Any) -> float | None:
    """A time as this learner gets it: multiplied by their time accommodation (None: untimed)."""
    if seconds is None or user is None:
        return seconds
    multiplier: float | None = user.time_accommodation.multiplier
    return None if multiplier is None else seconds * multiplier


class FragmentCache:
    """Rendered fragments by what they depend on, least recently used dropped first.

    A set's card is the same HTML for every learner with the same standing on it and the same
    time accommodation; the home page shows a dozen of them, and rendering them was most of the
    page's work. A key holds the objects it names by identity (a catalog reload makes new ones),
    so an id is never reused while its entry lives.
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], tuple[Any, Markup]] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_render(self, key: tuple[Any, ...], holds: Any, render: Any) -> Markup:
        """The fragment for key, rendered by render() the first time."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found[1]
        html = Markup(render())
        with self._lock:
            self._entries[key] = (holds, html)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return html


@dataclass(frozen=True, slots=True)
class CardStatus:
    """What a set's card shows of a learner's standing on it, and all a cached card holds."""

    badge: bool
    in_progress: bool
    best_correct: int

    @classmethod
    def of(cls, standing: Any) -> CardStatus:
        """The card's view of a standing (app.attempts.service.SetStanding)."""
        return cls(
            bool(standing.badge), standing.active_attempt_id is not None, standing.best_correct
        )


@dataclass(frozen=True, slots=True)
class _CardLearner:
    """What a cached card knows of its learner: the time accommodation, nothing else."""

    time_accommodation: Any


def _cached_fragments(env: Environment) -> dict[str, Any]:
    """The global that renders a learner's set cards through a cache.

    A card depends only on the catalog's objects (keys hold them by identity), the learner's time
    accommodation and what the cards show of their standings (CardStatus): they are rendered
    from exactly what their key holds, so learners alike share them and no learner's page can
    carry another's details; a learner's next view of an unchanged page renders none of it.
    A card is about 1 KB.
    """
    cards = FragmentCache(size=4096)

    def fragment(
        cache: FragmentCache, template: str, key: tuple[Any, ...], holds: Any, variables: Any
    ) -> Markup:
        compiled = env.get_template(template)
        if env.auto_reload:  # development: an edited template shows at once
            return Markup(compiled.render(variables))
        return cache.get_or_render(key, holds, lambda: compiled.render(variables))

    def learner(context: Context) -> tuple[Any, _CardLearner | None]:
        user = context.get("user")
        if user is None:
            return "anyone", None
        return user.time_accommodation, _CardLearner(user.time_accommodation)

    def statuses(context: Context) -> dict[str, CardStatus]:
        standing = context.get("standing", {})
        return {
            set_id: mine if isinstance(mine, CardStatus) else CardStatus.of(mine)
            for set_id, mine in standing.items()
        }

    @pass_context
    def set_card(context: Context, summary: Any, heading: str | None = None) -> Markup:
        """One timed set's card (_set_card.html) for the page's learner."""
        accommodation, user = learner(context)
        mine = statuses(context).get(summary.set.id)
        standing = {} if mine is None else {summary.set.id: mine}
        variables = {"summary": summary, "heading": heading, "user": user, "standing": standing}
        key = (id(summary), heading, accommodation, mine)
        return fragment(cards, "_set_card.html", key, summary, variables)

    return {"set_card": set_card}


_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Environment(Environment):
    """Jinja2's environment, reading `view.key` from a plain dict without raising an exception.

    Jinja2 tries an attribute first and the item after it; on a dict every key is first an
    AttributeError, and a question page looks up its view's keys a few dozen times (about 8% of
    the page's work in the app). A name that is no attribute of dict's reads as the item, as it
    would anyway; dict's own (`standing.get`) go the usual way.
    """

    def getattr(self, obj: Any, attribute: str) -> Any:
        """`obj.attribute` in a template."""
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)


def _user(request: Request) -> dict[str, Any]:
    # Set by the user dependency; pages rendered without it show the signed-out header.
    return {"user": getattr(request.state, "user", None)}


def _csp_nonce(request: Request) -> dict[str, Any]:
    # Set per request by the security middleware (app.main); every <script> tag carries it.
    return {"csp_nonce": getattr(request.state, "csp_nonce", "")}


def build_templates(auto_reload: bool = False) -> Jinja2Templates:
    """Create the template environment with RankLab's filters.

    Templates are compiled once; auto_reload (development only) re-reads a changed file, at the
    price of checking every template's modification time on every render. Markdown is rendered
    once per distinct text: challenge text is the same on every page view.
    """
    # Each item kind keeps its answer widget in its own folder: "kinds/<name>/answer.html".
    loader = ChoiceLoader(
        [
            FileSystemLoader(str(TEMPLATES_DIR)),
            PrefixLoader({"kinds": FileSystemLoader(str(KINDS_DIR))}),
        ]
    )
    environment = _Environment(loader=loader, autoescape=True)  # as Jinja2Templates sets it
    templates = Jinja2Templates(env=environment, context_processors=[_user, _csp_nonce])
    templates.env.auto_reload = auto_reload
    templates.env.filters.update(
        markdown=_markdown_once,
        inline=lru_cache(maxsize=4096)(markdown_inline),
        highlight=highlight,
        duration=duration,
        when=_when_for_learner,
        counted=counted,
        accommodated=accommodated,
        outcome=outcome_text.outcome,  # staff previews: outcomes and numbers in plain words
        number=outcome_text.number,
    )
    templates.env.globals.update(_cached_fragments(templates.env))
    templates.env.globals["static"] = static_assets.url  # fingerprinted: cached for a year
    templates.env.globals["icon"] = icon  # inline SVG: no emoji font needed
    return templates


def pygments_css() -> str:
    """Return the stylesheet for highlighted code (how static/css/pygments.css was made)."""
    return str(_FORMATTER.get_style_defs(".highlight"))
