"""Scores and rosters with a simulated LMS: the score the LMS records is the one the
learner's results page (and the gradebook CSV) shows; a failed send keeps the owed score
until it goes through; the roster sync brings the course's members in, after a key rotation."""

from __future__ import annotations

import csv
import io

from sqlmodel import Session, select

from app import cli
from app.classes.models import Membership
from app.db import make_engine
from app.lti import routes
from app.lti.models import LtiScoreOutbox
from tests.classes.test_classes import finish
from tests.support.learner import Learner
from tests.support.lti_platform import Person
from tests.support.waiting import wait_for


def outbox(database_url: str) -> list[LtiScoreOutbox]:
    engine = make_engine(database_url)
    with Session(engine) as session:
        rows = list(session.exec(select(LtiScoreOutbox)).all())
    engine.dispose()
    return rows


def test_the_lms_records_the_score_the_results_page_shows(any_world, clock):
    world = any_world
    with world.browser() as browser:
        world.launch(browser, "lena", "basics")
        shown = finish(Learner(browser), clock, first_answer="A")  # a wrong first try: not 100
    assert shown != "100"
    assert [row.sent_at for row in outbox(world.database_url)] == [None]  # owed, with the finish
    sent = world.teacher.post(f"{world.class_url}/lti/grades")  # "Send grades to the LMS"
    assert "Sent 1 scores to the LMS" in sent.text
    [score] = world.platform.scores_for("sub-lena")
    assert score["scoreGiven"] == float(shown) and score["scoreMaximum"] == 100
    assert (score["activityProgress"], score["gradingProgress"]) == ("Completed", "FullyGraded")
    [item] = world.platform.lineitems.values()  # made for the link, as the LMS's gradebook column
    assert (item["id"], item["resourceLinkId"]) == (score["lineitem"], "basics")
    canvas = world.teacher.get(f"{world.class_url}/gradebook.csv?flavour=canvas").text
    rows = {row[3]: row[5] for row in csv.reader(io.StringIO(canvas))}
    assert rows["lena@uni.example"] == shown


def test_a_failed_send_keeps_the_score_until_the_lms_takes_it(world, clock):
    world.platform.fail_scores = True
    with world.browser() as browser:
        world.launch(browser, "lena", "basics")
        shown = finish(Learner(browser), clock)
    assert routes.send_round(world.app).failed == 1  # type: ignore[arg-type]
    [row] = outbox(world.database_url)
    assert (row.sent_at, row.tries) == (None, 1) and "503" in (row.last_error or "")
    world.platform.fail_scores = False
    assert routes.send_round(world.app).sent == 0  # type: ignore[arg-type]  # waits its turn
    clock.advance(60)
    assert routes.send_round(world.app).sent == 1  # type: ignore[arg-type]
    assert [s["scoreGiven"] for s in world.platform.scores_for("sub-lena")] == [float(shown)]
    assert routes.send_round(world.app).sent == 0  # type: ignore[arg-type]  # sent once


def test_the_roster_sync_brings_the_course_in_after_a_key_rotation(world, monkeypatch):
    refused = world.teacher.post(f"{world.class_url}/lti/roster")
    assert refused.status_code == 404 and "launch it from the LMS first" in refused.text
    with world.browser() as browser:
        world.launch(browser, "lena", "basics")  # links the class to the course
        lena = Learner(browser)
        for action in ("roster", "grades"):  # a learner may not
            assert lena.post(f"{world.class_url}/lti/{action}").status_code == 403
    world.platform.enrol("course-7", "max", Person("sub-max", "Max Member", "max@uni.example"))
    assert cli.main(["lti", "rotate-key"]) == 0
    jwks = world.teacher.get("/lti/jwks.json").json()
    assert len(jwks["keys"]) == 2  # the new key signs; the old one stays published
    synced = world.teacher.post(f"{world.class_url}/lti/roster")
    assert "The LMS listed 3 members" in synced.text
    engine = make_engine(world.database_url)
    with Session(engine) as session:
        rows = session.exec(select(Membership).where(Membership.source == "lti")).all()
        found = {(row.email, row.role) for row in rows}
    engine.dispose()
    assert found == {
        ("lena@uni.example", "learner"),
        ("max@uni.example", "learner"),
        ("pat@uni.example", "instructor"),
    }
    assert world.platform.token_requests == 1


def test_the_tool_sends_an_owed_score_by_itself(sending_world, clock):
    world = sending_world
    with world.browser() as browser:
        world.launch(browser, "lena", "basics")
        shown = finish(Learner(browser), clock)
    sent = wait_for(lambda: world.platform.scores_for("sub-lena"), 20, "the score to be sent")
    assert [score["scoreGiven"] for score in sent] == [float(shown)]
