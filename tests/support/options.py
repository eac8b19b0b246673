"""Which option a test picks, found the way a learner finds it: by its text.

A page never carries an option's id (app.kinds.order: each option is sent as a token of its
showing, and most keys are "A"), and options are shuffled, so a test that means "the option
whose id is B" finds the label whose text is option B's text (rendered with the app's own
Markdown filter), and picks it by the letter it is shown under or sends its token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from app.challenges.loader import load_path
from app.challenges.schema import ChoiceBase
from app.templating import markdown


@dataclass
class ShownOption:
    """One option label of a page: the letter shown, the value its input sends, its text."""

    letter: str
    value: str = ""
    parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The option's text as read on the page, whitespace normalised."""
        return " ".join("".join(self.parts).split())


class _Options(HTMLParser):
    """Collects the option labels (data-testid="option") of a page or a fragment."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[ShownOption] = []
        self._label: ShownOption | None = None
        self._text_depth = 0  # open <span>s inside the label's text span (0: outside it)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "label" and named.get("data-testid") == "option":
            self._label = ShownOption(letter=named.get("data-letter") or "")
            self.found.append(self._label)
        elif self._label is not None and tag == "input":
            self._label.value = named.get("value") or ""
        elif self._label is not None and tag == "span":
            if self._text_depth:
                self._text_depth += 1
            elif "text" in (named.get("class") or "").split():
                self._text_depth = 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self._label, self._text_depth = None, 0
        elif tag == "span" and self._text_depth:
            self._text_depth -= 1

    def handle_data(self, data: str) -> None:
        if self._label is not None and self._text_depth:
            self._label.parts.append(data)


class _Text(HTMLParser):
    """The text of some HTML, tags stripped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def shown_options(html: str) -> list[ShownOption]:
    """Every option label of `html`, top to bottom."""
    parser = _Options()
    parser.feed(html)
    parser.close()
    return parser.found


def plain(text: str) -> str:
    """An option's Markdown text as a page reads it: rendered, tags stripped, spaces normalised."""
    parser = _Text()
    parser.feed(str(markdown(text)))
    parser.close()
    return " ".join("".join(parser.parts).split())


def shown_as(html: str, item: ChoiceBase, option_id: str) -> ShownOption:
    """The label `html` shows for `item`'s option `option_id` (exactly one must match)."""
    wanted = plain(next(option.text for option in item.options if option.id == option_id))
    labels = shown_options(html)
    matching = [label for label in labels if label.text == wanted]
    assert len(matching) == 1, (option_id, wanted, [label.text for label in labels])
    return matching[0]


def check(scope: Any, item: ChoiceBase, *option_ids: str) -> None:
    """Tick `item`'s options `option_ids` in a Playwright page or locator (a form) by the
    letters they are shown under."""
    html = scope.content() if hasattr(scope, "content") else scope.inner_html()
    for option_id in option_ids:
        letter = shown_as(html, item, option_id).letter
        scope.locator(f'[data-testid="option"][data-letter="{letter}"] input').check()


def choice_item(folder: Path, set_id: str, item_id: str | None = None) -> ChoiceBase:
    """An item answered by picking options, from a set of the challenges under `folder` (the
    first such item of the set when `item_id` is None)."""
    report = load_path(folder)
    loaded = next(s for s in report.sets if s.challenge_set.id == set_id)
    item = next(
        i
        for i in loaded.challenge_set.items
        if isinstance(i, ChoiceBase) and (item_id is None or i.id == item_id)
    )
    return item
