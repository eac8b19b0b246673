"""attack: an answer sent after the deadline and its grace, carrying a `first_sent` stamp that
says it first arrived in time, signed with the public placeholder secret
(`change-me-in-production`) that every install outside production used when none was set.
expect: with no secret set the app signs with a random secret made for this install (a file in
its state folder), so the forged stamp is refused and the answer is judged when it came: too
late (409), nothing stored.
"""

from __future__ import annotations

import re
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.attempts import arrival
from app.attempts.models import Submission
from app.config import PLACEHOLDER_SECRET, Settings
from app.deps import get_now
from app.main import create_app
from tests.conftest import make_settings
from tests.support.learner import Learner

SUBMISSION = re.compile(r'name="submission" value="([^"]+)"')


def test_a_first_sent_stamp_signed_with_the_placeholder_secret_is_refused(
    sqlite_url, clock, tmp_path, monkeypatch
):
    monkeypatch.delenv("RANKLAB_SECRET_KEY", raising=False)
    test_values = make_settings(sqlite_url).model_dump(exclude={"secret_key"})
    # No secret set, as `make run` runs it.
    settings = Settings(**{**test_values, "environment": "development", "state_dir": tmp_path})
    app = create_app(settings)
    app.dependency_overrides[get_now] = clock
    with TestClient(app) as client:
        learner = Learner(client)
        learner.start_as_guest()
        attempt = learner.start("test-basics")
        token = SUBMISSION.search(learner.get(f"{attempt}/q/1").text)
        assert token is not None
        in_time = clock.now + timedelta(seconds=50)  # 10 s before the 60 s deadline
        clock.advance(70)  # after the deadline and its 3 s grace
        path = f"{attempt}/q/1/answer"
        forged = arrival.stamp(PLACEHOLDER_SECRET, path, token[1], ["B"], in_time)
        form = {"choice": ["B"], "submission": token[1], arrival.FIELD: forged}
        response = learner.post(path, form, follow_redirects=False)
        with Session(client.app.state.engine) as session:  # type: ignore[attr-defined]
            stored = session.exec(select(Submission)).all()
        assert response.status_code == 409  # judged when it came: after the time was up
        assert stored == []  # before: stored as answered at in_time, correct and on time
