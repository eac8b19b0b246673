"""Bytes on the wire for a first and a repeat visit of the home page, a question and a lab step.

Serves the real app (the shipped challenges, a migrated SQLite file in a temporary folder, no
executor: pages only) on a loopback port and drives Debian's chromium with Playwright. Chrome's
own network log (CDP `Network.loadingFinished.encodedDataLength`: headers and body as they came
over the socket) is summed per visit:

- first visit: the browser cache emptied just before;
- repeat visit: the same page again, its cache as the first visit left it;
- as before: the first visit again with compression refused (`Accept-Encoding: identity`) and the
  cache disabled, which is what every visit cost before static files were fingerprinted,
  cached and gzipped.

    .venv/bin/python bench/bytes_on_wire.py

Numbers, not assertions. Needs chromium (`apt-get install -y chromium`).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script: `app` from this checkout

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from app import migrations  # noqa: E402
from app.challenges.loader import load_path  # noqa: E402
from app.config import ROOT, Settings  # noqa: E402
from app.main import create_app  # noqa: E402
from tests.support.live import serving  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        database = f"sqlite:///{Path(folder) / 'bytes.db'}"
        migrations.upgrade(database)
        report = load_path(ROOT / "challenges")
        first_set = report.sets[0].challenge_set.id
        first_lab = report.labs[0].lab
        settings = Settings(
            environment="development",
            database_url=database,
            executor_url=None,
            secret_key="bytes-on-wire",
        )  # type: ignore[call-arg]
        app = create_app(settings)
        with serving(app) as base, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_context(base_url=base).new_page()
            cdp = page.context.new_cdp_session(page)
            cdp.send("Network.enable")
            page.goto("/")
            page.get_by_test_id("start-guest").click()
            page.goto(f"/sets/{first_set}")
            page.get_by_test_id("start").click()
            page.wait_for_url("**/q/1")
            question = page.url
            step = f"{base}/labs/{first_lab.id}/steps/{first_lab.steps[0].id}"
            print(f"{'page':<10} {'first visit':>12} {'repeat visit':>13} {'as before':>11}")
            for label, url in (("home", f"{base}/"), ("question", question), ("lab step", step)):
                listen = _Listener(cdp)
                first = listen.visit(page, url, fresh=True)
                repeat = listen.visit(page, url, fresh=False)
                before = listen.visit(page, url, fresh=True, as_before=True)
                print(f"{label:<10} {_kb(first):>12} {_kb(repeat):>13} {_kb(before):>11}")
            browser.close()


class _Listener:
    """Sums CDP's encodedDataLength per visit (one listener for the whole session)."""

    def __init__(self, cdp: Any) -> None:
        self.cdp = cdp
        self.received: dict[str, int] = {}
        cdp.on("Network.loadingFinished", self._finished)

    def _finished(self, event: dict[str, Any]) -> None:
        self.received[event["requestId"]] = int(event["encodedDataLength"])

    def visit(self, page: Page, url: str, *, fresh: bool, as_before: bool = False) -> int:
        if fresh:
            self.cdp.send("Network.clearBrowserCache")
        self.cdp.send("Network.setCacheDisabled", {"cacheDisabled": as_before})
        headers = {"Accept-Encoding": "identity"} if as_before else {}
        self.cdp.send("Network.setExtraHTTPHeaders", {"headers": headers})
        self.received.clear()
        page.goto(url, wait_until="networkidle")
        return sum(self.received.values())


def _kb(size: int) -> str:
    return f"{size / 1024:.1f} KB"


if __name__ == "__main__":
    main()
