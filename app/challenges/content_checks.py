"""Checks on learner-facing Markdown beyond the schema: no images from other sites, and no notes
addressed to authors (where an item came from belongs in a YAML comment, not in its text).

An image from another host would be fetched by every learner's browser as the page opens,
telling that host who reads which question and when; the Content-Security-Policy (img-src
'self' data:) blocks it anyway, so the author would see a broken image. Local paths and inline
raster images (data:image/png, gif, jpeg, webp: what the Markdown renderer accepts) are fine.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token
from pydantic import BaseModel

# Raw HTML is not rendered (it shows as text), but an <img> in the source is still a mistake.
_RAW_IMG = re.compile(r"""<img\b[^>]*?\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_INLINE_RASTER = re.compile(r"^data:image/(?:png|gif|jpeg|webp);", re.I)
# What a URL parser drops before reading a URL: leading/trailing spaces and controls, tabs and
# newlines anywhere. Checking what the browser would see stops "\thttps://…" slipping through.
_IGNORED_BY_BROWSERS = re.compile(r"[\t\n\r]")
_C0_AND_SPACE = "".join(chr(code) for code in range(0x21))


def is_external_url(url: str) -> bool:
    """Whether a browser would fetch this image from somewhere other than this site."""
    seen = _IGNORED_BY_BROWSERS.sub("", url).strip(_C0_AND_SPACE).replace("\\", "/")
    if seen.startswith("//"):  # protocol-relative: another host
        return True
    try:
        scheme = urlsplit(seen).scheme
    except ValueError:  # unparseable (e.g. a broken IPv6 host): not local either
        return True
    return bool(scheme) and not _INLINE_RASTER.match(seen)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # The renderer's settings (app.templating): raw HTML off, tables on.
    return MarkdownIt("js-default").enable("table")


def _images(tokens: list[Token]) -> Iterator[str]:
    for token in tokens:
        if token.type == "image":
            yield str(token.attrGet("src") or "")
        if token.children:
            yield from _images(token.children)


def external_images(markdown: str) -> list[str]:
    """Return the URL of every image in this Markdown that another site would serve."""
    urls = list(_images(_parser().parse(markdown)))
    urls += [
        next(group for group in match.groups() if group is not None)
        for match in _RAW_IMG.finditer(markdown)
    ]
    return [url for url in urls if is_external_url(url)]


# Phrases that speak about the content's history to its authors, not to learners.
_AUTHOR_NOTE = re.compile(
    r"\b(?:the seed(?:'s| version| snippet| page| claimed| said| says)|in the seed|from the seed"
    r"|note to (?:authors?|self)|author'?s? note|TODO|FIXME)\b",
    re.I,
)


def author_notes(markdown: str) -> list[str]:
    """Return each phrase of this learner-facing Markdown that addresses authors."""
    return [match.group(0) for match in _AUTHOR_NOTE.finditer(markdown)]


# Options are shuffled for each learner (app.kinds.order), so a letter or a place names a
# different option for each of them; items are drawn alone too (quizzes, review), so "the next
# item" may not come next. Code is blanked out first: `B = x` or `A or B` in code is not prose.
_CODE = re.compile(r"```.*?```|~~~.*?~~~|`[^`\n]*`", re.S)
_LETTER = r"[A-H]"
_ALONE = r"(?<![\w.`'’-])"  # a letter standing alone, not part of a word or a name
_PLACE = r"first|second|third|fourth|fifth|last|next|previous|preceding|following|later|earlier"
_OPTION_REFERENCE = re.compile(
    # "option B", "answer (C)", "choices A"
    r"(?i:\b(?:options?|choices?|answers?))\s+\(?" + _LETTER + r"\)?(?![\w'’-])"
    # "B is wrong", "C would be the trap"
    r"|" + _ALONE + _LETTER + r"\s+(?:is|was|would be)\s+(?i:right|wrong|correct|incorrect"
    r"|true|false|the\s+(?:key|answer|trap|distractor))\b"
    # "A and B", "C or D"
    r"|" + _ALONE + _LETTER + r"\s+(?:and|or|nor)\s+" + _LETTER + r"(?![\w'’-])"
    # "the first option", "a later item", "the next question"
    r"|(?i:\b(?:the|a|an|this|that)\s+(?:" + _PLACE + r")\s+(?:options?|choices?|items?"
    r"|questions?)\b)"
    # "the option above", "questions below"
    r"|(?i:\b(?:options?|choices?|items?|questions?)\s+(?:above|below)\b)"
    # "the first two options"
    r"|(?i:\b(?:first|last)\s+(?:two|three|four)\s+(?:options|choices)\b)"
)


def option_references(markdown: str) -> list[str]:
    """Return each phrase of this learner-facing Markdown that names an option by its letter or
    place, or another item by its place: neither is the same for every learner."""
    prose = _CODE.sub(lambda match: " " * len(match.group(0)), markdown)
    return [match.group(0) for match in _OPTION_REFERENCE.finditer(prose)]


def markdown_fields(model: BaseModel) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Yield (path, text) for every field documented as Markdown, however deep, in YAML order."""
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if isinstance(value, str) and "(Markdown)" in (field.description or ""):
            yield (name,), value
        else:
            for path, text in _nested(value):
                yield (name, *path), text


def _nested(value: Any) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, BaseModel):
        yield from markdown_fields(value)
    elif isinstance(value, list):
        for index, element in enumerate(value):
            for path, text in _nested(element):
                yield (index, *path), text
