"""Take the screenshots the README and the docs show: home, a lesson, progress and a lab step,
at 1280 px and 390 px wide, from the real app (`ranklab serve` with its embedded executor, a fresh SQLite
file in a temporary folder) driven by Debian's chromium.

    .venv/bin/python docs/screenshots/take.py      # or: make screenshots

Writes docs/screenshots/*.png. Needs chromium and what `make run` needs (root, cgroups).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import Page, sync_playwright

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from executor.ports import free_port  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
WIDTHS = {1280: 900, 390: 844}  # width: viewport height (a laptop, a phone)
LAB = "collectives-by-hand"
LESSON = "collectives"  # its all-reduce section, predicted and run


def main() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "RANKLAB_DATABASE_URL": f"sqlite:///{Path(folder) / 'shots.db'}",
            "RANKLAB_SECRET_KEY": "screenshots",
        }
        ranklab = str(REPO / ".venv" / "bin" / "ranklab")
        subprocess.run([ranklab, "db", "upgrade"], env=env, check=True, cwd=REPO)
        server = subprocess.Popen(
            [ranklab, "serve", "--port", str(port)], env=env, cwd=REPO, start_new_session=True
        )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(base)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                for width, height in WIDTHS.items():
                    context = browser.new_context(
                        base_url=base, viewport={"width": width, "height": height}
                    )
                    _shoot(context.new_page(), width)
                    context.close()
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)


def _wait_until_up(base: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError("the app did not start")


def _shoot(page: Page, width: int) -> None:
    page.goto("/")
    page.screenshot(path=HERE / f"home-{width}.png")
    page.get_by_test_id("start-guest").click()
    _shoot_lesson(page, width)
    page.goto(f"/labs/{LAB}")
    page.get_by_test_id("lab-continue").click()
    page.wait_for_url("**/steps/**")
    deadline = time.monotonic() + 120  # the embedded executor may still be warming up
    while True:
        page.get_by_test_id("run").click()
        page.wait_for_timeout(500)
        page.locator("form.lab-run[data-state=idle]").wait_for(timeout=60_000)
        panes = page.locator("[data-testid=rank-0] pre.out")
        if panes.count() and "rank 0" in panes.inner_text() or time.monotonic() > deadline:
            break
        page.wait_for_timeout(3000)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=HERE / f"lab-step-{width}.png", full_page=True)
    page.goto("/me/progress")
    page.screenshot(path=HERE / f"progress-{width}.png")


def _shoot_lesson(page: Page, width: int) -> None:
    """A lesson section after a prediction: the verdict and every rank's pane, filled."""
    example = page.locator("[data-example=all-reduce-in-place]")
    deadline = time.monotonic() + 180  # the embedded executor may still be warming up
    page.goto(f"/topics/{LESSON}/lesson")
    while example.get_by_test_id("runs-unavailable").count() and time.monotonic() < deadline:
        page.wait_for_timeout(3000)  # no run panel until the executor answers its health check
        page.reload()
    if example.get_by_test_id("predict-form").count():
        example.get_by_test_id("prediction-option").filter(has_text="None 6.0").click()
        example.get_by_test_id("predict-button").click()
    else:
        example.get_by_test_id("run-button").click()
    summary = example.get_by_test_id("run-summary")
    while True:
        summary.filter(has_not_text="Running").wait_for(timeout=60_000)
        if summary.inner_text().startswith("ok") or time.monotonic() > deadline:
            break
        page.wait_for_timeout(3000)
        example.get_by_test_id("run-button").click()
    page.locator("#section-all-reduce").screenshot(path=HERE / f"lesson-{width}.png")


if __name__ == "__main__":
    main()
