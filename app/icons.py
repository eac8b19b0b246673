"""Inline SVG icons for templates: `{{ icon("timer") }}` (or a badge's emoji, resolved).

Each icon is Lucide's SVG file (static/vendor/lucide/), read once, sized to the text around it by
CSS (`.icon`: 1em, currentColor) and hidden from screen readers (the text beside it says it).
Inline, not an <img>: it takes the text's colour, needs no request, and no emoji font.
"""

from __future__ import annotations

import re
from functools import cache

from markupsafe import Markup

from app.challenges import icons
from app.static_assets import STATIC_DIR

LUCIDE = STATIC_DIR / "vendor" / "lucide"
_OPEN = re.compile(r"<svg\b[^>]*>", re.DOTALL)


@cache
def _body(name: str) -> str:
    """The inside of an icon's <svg> element (its shapes)."""
    svg = (LUCIDE / f"{name}.svg").read_text()
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.DOTALL)
    start = _OPEN.search(svg)
    assert start is not None, name
    return " ".join(svg[start.end() : svg.rindex("</svg>")].split())


def icon(name: str | None, label: str | None = None) -> Markup:
    """An icon as inline SVG; a name it does not know draws the default (an award)."""
    resolved = icons.resolve(name or "") or icons.DEFAULT
    labelled = (
        f' role="img" aria-label="{Markup.escape(label)}"' if label else ' aria-hidden="true"'
    )
    return Markup(
        f'<svg class="icon icon-{resolved}" viewBox="0 0 24 24" fill="none" stroke="currentColor"'
        f' stroke-width="2" stroke-linecap="round" stroke-linejoin="round" focusable="false"'
        f"{labelled}>{_body(resolved)}</svg>"
    )
