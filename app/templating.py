"""Jinja2 set-up: Markdown (raw HTML disabled) and server-side syntax highlighting (Pygments)."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates
from jinja2 import ChoiceLoader, FileSystemLoader, PrefixLoader
from markdown_it import MarkdownIt
from markupsafe import Markup
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "templates"
KINDS_DIR = Path(__file__).resolve().parent / "kinds"
_FORMATTER = HtmlFormatter(cssclass="highlight", wrapcode=True)


def highlight(code: str, language: str = "python") -> Markup:
    """Return code as highlighted HTML (Pygments escapes it)."""
    try:
        lexer = get_lexer_by_name(language) if language else PythonLexer()
    except ClassNotFound:
        lexer = PythonLexer()
    return Markup(pygments_highlight(code, lexer, _FORMATTER))


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    # "js-default" turns raw HTML off: challenge text can never inject markup or scripts.
    return MarkdownIt(
        "js-default",
        {"highlight": lambda code, lang, _attrs: str(highlight(code, lang or "python"))},
    ).enable("table")


def markdown(text: str | None) -> Markup:
    """Render Markdown to safe HTML."""
    return Markup(_markdown().render(text or ""))


def duration(seconds: float | timedelta | None) -> str:
    """Format seconds as m:ss (or h:mm:ss)."""
    if seconds is None:
        return "untimed"
    total = int(seconds.total_seconds() if isinstance(seconds, timedelta) else seconds)
    hours, rest = divmod(max(total, 0), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def when(moment: datetime | None) -> str:
    """Format a UTC time for people."""
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M UTC")


def _user(request: Request) -> dict[str, Any]:
    # Set by the user dependency; pages rendered without it show the signed-out header.
    return {"user": getattr(request.state, "user", None)}


def build_templates() -> Jinja2Templates:
    """Create the template environment with RankLab's filters."""
    templates = Jinja2Templates(directory=str(TEMPLATES_DIR), context_processors=[_user])
    # Each item kind keeps its answer widget in its own folder: "kinds/<name>/answer.html".
    templates.env.loader = ChoiceLoader(
        [
            FileSystemLoader(str(TEMPLATES_DIR)),
            PrefixLoader({"kinds": FileSystemLoader(str(KINDS_DIR))}),
        ]
    )
    templates.env.filters.update(
        markdown=markdown, highlight=highlight, duration=duration, when=when
    )
    return templates


def pygments_css() -> str:
    """Return the stylesheet for highlighted code (how static/css/pygments.css was made)."""
    return str(_FORMATTER.get_style_defs(".highlight"))
