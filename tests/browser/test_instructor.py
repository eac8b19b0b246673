"""An instructor in a real browser: sees a broken file, previews a set, verifies it for real."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from app.accounts.models import Role
from app.config import ROOT
from tests.support.accounts import set_role

pytestmark = pytest.mark.browser


def sign_up_as_instructor(page, database_url: str, username: str = "browser-teacher") -> None:
    """Register (each test its own name: the live server is shared) and become an instructor."""
    page.goto("/register")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("teaches-ddp")
    page.get_by_test_id("register").click()
    page.wait_for_url(re.compile(r"/me/progress$"))
    set_role(database_url, username, Role.INSTRUCTOR)


def test_an_instructor_previews_and_verifies_a_set_against_real_runs(page, live_database_url):
    sign_up_as_instructor(page, live_database_url)
    page.goto("/")
    page.get_by_test_id("nav-content").click()
    files = page.get_by_test_id("content-file")
    expect(files.first).to_be_visible()
    page.locator('[data-path$="verify-demo/set.yaml"]').get_by_test_id("preview-link").click()
    expect(page.get_by_test_id("preview-item")).to_have_count(2)
    expect(page.locator('[data-item-id="ddp-forward-output"] .key-mark')).to_have_count(1)
    page.get_by_test_id("verify-set").click()
    # Progress comes item by item: the first verdict shows while the hang is still being proven.
    expect(page.get_by_test_id("verify-progress")).to_have_count(2)
    forward = page.locator('[data-testid="verify-progress"][data-item-id="ddp-forward-output"]')
    hang = page.locator('[data-testid="verify-progress"][data-item-id="uneven-iterations-hang"]')
    expect(forward).to_have_attribute("data-state", "pass", timeout=60_000)
    expect(hang).to_have_attribute("data-state", "running")
    expect(page.get_by_test_id("verify-status")).to_contain_text("1 of 2 items done")
    # A second click joins the running verification instead of starting it again.
    with page.expect_response(lambda response: response.request.method == "POST") as clicked:
        page.get_by_test_id("verify-set").click()
    joined = clicked.value.text()
    assert 'data-item-id="ddp-forward-output" data-state="pass"' in joined
    assert "1 of 2 items done" in joined
    report = page.get_by_test_id("verify-report")
    expect(report).to_have_attribute("data-job-state", "done", timeout=150_000)
    expect(report).to_have_attribute("data-passed", "true")
    results = page.get_by_test_id("verify-result")
    expect(results).to_have_count(2)
    for verdict in results.all():
        expect(verdict).to_have_attribute("data-verdict", "pass")
    expect(
        page.locator('[data-item-id="ddp-forward-output"][data-testid="verify-result"]')
    ).to_contain_text("tensor([[ 0.4810, -1.4331]]")
    expect(
        page.locator('[data-item-id="uneven-iterations-hang"][data-testid="verify-result"]')
    ).to_contain_text("timeout")


def test_the_first_admin_from_the_cli_promotes_an_instructor_in_the_ui(
    browser, live_server, live_database_url
):
    created = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "users",
            "create",
            "cli-admin",
            "--role",
            "admin",
            "--password-stdin",
        ],
        input="administers\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "DATABASE_URL": live_database_url},
    )
    assert created.returncode == 0, created.stderr
    learner_context = browser.new_context(base_url=live_server)
    learner = learner_context.new_page()
    learner.goto("/register")
    learner.get_by_label("Username").fill("soon-teacher")
    learner.get_by_label("Password").fill("will-teach")
    learner.get_by_test_id("register").click()
    learner.wait_for_url(re.compile(r"/me/progress$"))
    assert learner.get_by_test_id("nav-content").count() == 0

    admin_context = browser.new_context(base_url=live_server)
    admin = admin_context.new_page()
    admin.goto("/login")
    admin.get_by_label("Username").fill("cli-admin")
    admin.get_by_label("Password").fill("administers")
    admin.get_by_test_id("login").click()
    admin.get_by_test_id("nav-users").click()
    row = admin.locator('[data-testid="user-row"][data-username="soon-teacher"]')
    row.get_by_label("Role of soon-teacher").select_option("instructor")
    row.get_by_test_id("save-user").click()
    expect(admin.locator('[data-username="soon-teacher"] select[name="role"]')).to_have_value(
        "instructor"
    )

    learner.goto("/")
    learner.get_by_test_id("nav-content").click()
    expect(learner.get_by_test_id("content-files")).to_be_visible()
    learner_context.close()
    admin_context.close()
