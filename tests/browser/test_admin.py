"""An admin in a real browser: the charts are drawn, and they and their tables show the data."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect

from app import migrations
from app.accounts.models import Role
from app.main import create_app
from tests.analytics import dataset
from tests.browser.conftest import watch_csp
from tests.conftest import FakeClock, make_settings
from tests.support.accounts import set_role
from tests.support.live import serving

pytestmark = pytest.mark.browser
ADMIN_NUMBERS = itertools.count(1)  # one account per test: the server outlives each test


@pytest.fixture(scope="module")
def admin_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Serve the fixture set over the fixture dataset (no executor: nothing here runs code)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('admin') / 'admin.db'}"
    migrations.upgrade(url)
    # Playwright's sync API runs an event loop in this thread, and writes refuse to run on one
    # (app.db.begin_write): seed from a worker thread, as a request would.
    with ThreadPoolExecutor(1) as worker:
        worker.submit(dataset.build, url, FakeClock()).result()
    app = create_app(make_settings(url, challenges_dir=dataset.FIXTURES))
    with serving(app) as base_url:
        yield base_url, url


@pytest.fixture
def admin_page(browser, admin_server, csp_problems):
    """A browser signed in as an admin."""
    base_url, database_url = admin_server
    context = browser.new_context(base_url=base_url)
    context.set_default_timeout(15_000)
    watch_csp(context, csp_problems)
    page = context.new_page()
    page.goto("/register")
    username = f"root{next(ADMIN_NUMBERS)}"
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("administers")
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_test_id("who")).to_have_text(username)
    set_role(database_url, username, Role.ADMIN)
    yield page
    context.close()
    assert csp_problems == [], "the page broke its Content-Security-Policy"


def drawn(page, chart_id: str) -> list[list[float | None]]:
    """Wait until Chart.js has drawn the chart; return the numbers it plots, dataset by dataset."""
    canvas = page.locator(f'[data-testid="{chart_id}"] canvas')
    expect(canvas).to_have_attribute("data-chart-ready", "true")
    box = canvas.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 100
    data: list[list[float | None]] = canvas.evaluate(
        "canvas => window.Chart.getChart(canvas).data.datasets.map(d => d.data)"
    )
    # Something was painted: not every pixel of the canvas is transparent.
    painted = canvas.evaluate(
        "canvas => canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height)"
        ".data.some((value, index) => index % 4 === 3 && value > 0)"
    )
    assert painted
    return data


def column(page, table_id: str, testid: str) -> list[str]:
    return page.locator(f'[data-testid="{table_id}"] td[data-testid="{testid}"]').all_inner_texts()


def test_the_admin_sees_the_overview_chart_and_table_agree(admin_page):
    page = admin_page
    page.goto("/")
    page.get_by_test_id("nav-admin").click()
    page.wait_for_url("**/admin")
    totals = [page.get_by_test_id(f"total-{name}").inner_text() for name in ("attempts", "badges")]
    assert totals == ["6", "1"]
    assert drawn(page, "chart-daily") == [[3, 0, 3], [3, 0, 2], [1, 0, 0]]
    rows = page.locator('[data-testid="table-daily"] tbody tr').all_inner_texts()
    assert [row.split() for row in rows] == [
        ["2026-11-22", "3", "3", "1"],
        ["2026-11-23", "0", "0", "0"],
        ["2026-11-24", "3", "2", "0"],
    ]
    # The mean of the results pages' scores (100, 56, 67, 33, 33: bob's second try scores ⅔).
    assert drawn(page, "chart-sets") == [[57.8], [20.0]]
    assert column(page, "table-sets", "mean-score") == ["57.8"]
    assert column(page, "table-sets", "badge-rate") == ["20.0"]


def test_the_admin_opens_a_set_and_its_charts_match_the_item_table(admin_page):
    page = admin_page
    page.goto("/admin")
    page.get_by_role("link", name="Item analysis").click()
    page.wait_for_url("**/admin/sets/test-analysis")
    expect(page.get_by_test_id("finished-only")).to_contain_text("finished attempts only")
    facility, discrimination = drawn(page, "chart-indices")
    assert facility == [80.0, 53.3, 40.0]  # the mean item score: bob's second try scores ⅔
    assert discrimination == [0.0, -32.7, 16.7]
    assert column(page, "table-items", "facility") == ["80.0", "53.3", "40.0"]
    assert column(page, "table-items", "discrimination") == ["0.0", "-32.7", "16.7"]
    assert drawn(page, "chart-time") == [[30.0, 32.0, 22.0]]
    assert column(page, "table-items", "mean-time") == ["30.0", "32.0", "22.0"]
    assert column(page, "table-items", "timeouts") == ["0", "1", "2"]
    assert column(page, "table-items", "hints") == ["2", "1", "no hint"]
    assert column(page, "table-items", "options")[1] == "A ✓: 5 · B: 2 · C ✓: 3 · D: 0"


def test_the_admin_pages_draw_their_charts_within_the_content_security_policy(
    admin_page, csp_problems
):
    page = admin_page
    for url, chart in (("/admin", "chart-daily"), ("/admin/sets/test-analysis", "chart-indices")):
        page.goto(url)
        drawn(page, chart)
        assert csp_problems == [], url
    page.goto("/admin/users")
    page.goto("/admin/learners")
    page.wait_for_load_state("load")
    assert csp_problems == []
