"""No external images in learner content: `validate` flags them; the renderer never emits them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.challenges.content_checks import is_external_url
from app.challenges.loader import load_path
from app.templating import markdown
from tests.conftest import TEST_CHALLENGES


@pytest.fixture
def content(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(TEST_CHALLENGES / "basics", target / "basics")
    return target


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def errors(root: Path) -> list[str]:
    return [str(error) for error in load_path(root, display_root=root.parent).errors]


@pytest.mark.parametrize(
    "url",
    [
        "https://tracker.example/pixel.png",
        "http://tracker.example/p.gif",
        "//tracker.example/p.gif",
        "HTTPS://TRACKER.EXAMPLE/P.GIF",
        "ftp://files.example/a.png",
        "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=",
    ],
)
def test_urls_that_leave_the_site_are_external(url):
    assert is_external_url(url)


@pytest.mark.parametrize(
    "url",
    ["/static/img/ranks.png", "ranks.png", "../img/a.png", "data:image/png;base64,iVBORw0KGgo="],
)
def test_local_paths_and_inline_raster_images_are_not(url):
    assert not is_external_url(url)


def test_an_external_image_in_a_prompt_is_reported_at_its_url(content: Path):
    set_file = content / "basics" / "set.yaml"
    replace(
        set_file,
        "prompt: What does `dist.get_world_size()` return?",
        "prompt: What does `dist.get_world_size()` return? ![ranks](https://cdn.example/r.png)",
    )
    line = next(
        number
        for number, text in enumerate(set_file.read_text().splitlines(), 1)
        if "cdn.example" in text
    )
    column = set_file.read_text().splitlines()[line - 1].index("https://") + 1
    assert errors(content) == [
        f"challenges/basics/set.yaml:{line}:{column}: items.0.prompt: external image "
        "'https://cdn.example/r.png': images must come from this site (a path, not a URL)"
    ]


def test_every_markdown_field_is_checked_raw_img_tags_too(content: Path):
    set_file = content / "basics" / "set.yaml"
    replace(
        set_file, "description: A tiny set", "description: >-\n  ![a](//x.example/a.png) A tiny set"
    )
    replace(
        set_file,
        "hint: Count the processes.",
        "hint: |\n      Count.\n      ![b](http://x.example/b.png)",
    )
    replace(
        set_file, "feedback: FEEDBACK-B-WORLD Yes.", 'feedback: "<img src=http://x.example/c.png>"'
    )
    replace(
        set_file,
        "explanation: KEY-EXPLANATION-SPEEDUP 100 / 30 = 3.33.",
        "explanation: |\n      ![d][pic]\n\n      [pic]: https://x.example/d.png",
    )
    replace(set_file, "prompt: One GPU", "prompt: >-\n      ![fine](/static/img/local.png) One GPU")
    found = errors(content)
    fields = [error.split(": ")[1] for error in found]
    assert fields == [
        "description",
        "items.0.hint",
        "items.0.options.1.feedback",
        "items.1.explanation",
    ], found
    hint_line = set_file.read_text().splitlines().index("      ![b](http://x.example/b.png)") + 1
    assert f"set.yaml:{hint_line}:12:" in found[1]


def test_the_renderer_never_emits_an_external_image():
    html = markdown("![ranks](https://cdn.example/r.png) and ![ref][r]\n\n[r]: //cdn.example/s.png")
    assert "<img" not in html
    assert 'href="https://cdn.example/r.png"' in html  # shown as a link the learner may follow
    assert "ranks" in html


def test_the_renderer_keeps_local_images():
    html = markdown('![ranks](/static/img/ranks.png "Ranks")')
    assert '<img src="/static/img/ranks.png" alt="ranks" title="Ranks"' in html


def test_the_authoring_guide_says_images_must_be_local():
    guide = (Path(__file__).resolve().parents[2] / "docs" / "authoring.md").read_text()
    assert "external image" in guide.lower()


@pytest.mark.parametrize(
    "note", ["The seed claimed otherwise.", "Nothing changed from the seed.", "TODO check this."]
)
def test_a_note_to_authors_in_learner_text_is_an_error_at_its_position(content: Path, note: str):
    set_file = content / "basics" / "set.yaml"
    replace(set_file, "It is the number of ranks", f"{note} It is the number of ranks")
    [error] = errors(content)
    assert error.startswith("challenges/basics/set.yaml:18:")
    assert "items.0.explanation" in error and "speaks to authors" in error


def test_the_word_seed_about_random_numbers_is_fine(content: Path):
    set_file = content / "basics" / "set.yaml"
    replace(set_file, "It is the number of ranks", "Seed every rank with torch.manual_seed(0).")
    assert errors(content) == []
