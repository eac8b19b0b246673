"""A live app on a real port and Debian's chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi import FastAPI
from sqlmodel import Session

from app import migrations
from app.config import ROOT
from app.db import make_engine, utcnow
from app.lti import service as lti
from app.main import create_app
from tests.conftest import FIXTURES, make_settings
from tests.support.live import serving
from tests.support.lti_platform import Platform, running_platform

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def live_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the live server keeps its database (tests make staff users in it)."""
    return tmp_path_factory.mktemp("live")


@pytest.fixture(scope="session")
def live_database_url(live_folder: Path) -> str:
    """The live server's SQLite database."""
    return f"sqlite:///{live_folder / 'live.db'}"


@pytest.fixture(scope="session")
def live_app(live_folder: Path, live_database_url: str, executor_url: str) -> FastAPI:
    """The live server's app: a test may fake its clock (dependency_overrides[get_now])."""
    folder = live_folder
    challenges = folder / "challenges"
    shutil.copytree(ROOT / "challenges", challenges)
    shutil.copytree(FIXTURES / "quick", challenges / "quick")
    shutil.copytree(FIXTURES / "challenges" / "runs", challenges / "runs")
    shutil.copytree(FIXTURES / "modes", challenges / "modes")
    shutil.copytree(FIXTURES / "labs" / "hello", challenges / "hello-lab")
    shutil.copytree(FIXTURES / "verify-demo", challenges / "verify-demo")
    shutil.copytree(FIXTURES / "lessons", challenges / "lesson-drill")
    shutil.copytree(FIXTURES / "variants", challenges / "variants")
    shutil.copytree(FIXTURES / "lesson-pool", challenges / "lesson-pool")
    url = live_database_url
    migrations.upgrade(url)
    return create_app(
        make_settings(
            url, challenges_dir=challenges, executor_url=executor_url, lti_send_interval_s=1
        )
    )


@pytest.fixture(scope="session")
def live_server(live_app: FastAPI) -> Iterator[str]:
    """Serve the real challenges plus test sets, with a real executor, from a background thread."""
    with serving(live_app) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's chromium, headless (Playwright cannot download its own browser here)."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is required in CI (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield launched
        launched.close()


# Runs in every page before its own scripts (Playwright injects it, outside the page's CSP).
_REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => window.__cspViolation(
  `${event.effectiveDirective} blocked ${event.blockedURI || "inline code"}` +
  ` in ${event.sourceFile || location.pathname}:${event.lineNumber}`));
"""


def watch_csp(context, problems: list[str]) -> None:
    """Collect, for every page of this context, each Content-Security-Policy violation, each
    console message about the policy or an Alpine expression, and each uncaught error."""
    context.expose_binding("__cspViolation", lambda _source, text: problems.append(text))
    context.add_init_script(_REPORT_VIOLATIONS)

    def console(message) -> None:
        if "Content Security Policy" in message.text or "Alpine" in message.text:
            problems.append(f"console {message.type}: {message.text}")

    context.on("console", console)
    context.on("weberror", lambda error: problems.append(f"uncaught: {error.error}"))


@pytest.fixture
def csp_problems() -> list[str]:
    """What watch_csp saw in this test's browser context (tests may assert on it midway)."""
    return []


@pytest.fixture
def page(browser, live_server, csp_problems):
    """A fresh browser context (no cookies) per test; any CSP violation in it fails the test."""
    context = browser.new_context(base_url=live_server)
    context.set_default_timeout(15_000)
    watch_csp(context, csp_problems)
    yield context.new_page()
    context.close()
    assert csp_problems == [], "the page broke its Content-Security-Policy"


@pytest.fixture
def lms(live_server: str, live_database_url: str) -> Iterator[Platform]:
    """A simulated LMS registered with the live server. It is reached as localhost, the live
    server as 127.0.0.1: two sites, so the browser treats the launch as the cross-site post it
    is with a real LMS (SameSite cookies included)."""
    with running_platform() as platform:
        platform.url = platform.url.replace("127.0.0.1", "localhost")
        platform.connect(live_server)
        engine = make_engine(live_database_url)

        def register() -> None:
            with Session(engine) as session:
                lti.add_platform(session, **platform.registration(), now=utcnow())

        # On a worker thread: Playwright's sync API runs an event loop in this one.
        with ThreadPoolExecutor(1) as worker:
            worker.submit(register).result()
        engine.dispose()
        yield platform
