"""LTI 1.3 launches against a simulated LMS: a full launch signs the learner in, joins the
course's class and opens the set; a bad signature, a wrong audience, an expired token, an
unknown deployment, a replay and a launch finished in another browser are refused (4xx)."""

from __future__ import annotations

from joserfc.jwk import RSAKey
from sqlmodel import Session, select

from app.accounts.models import Role, User
from app.classes.models import Klass, Membership
from app.db import make_engine
from app.lti import keys
from tests.support.lti_platform import CLAIM


def members(database_url: str) -> dict[str, tuple[str, str, Role]]:
    """username → (membership role, source, account role) in the class linked to course-7."""
    engine = make_engine(database_url)
    with Session(engine) as session:
        klass = session.exec(select(Klass).where(Klass.lti_context_id == "course-7")).one()
        rows = session.exec(
            select(Membership, User).join(User).where(Membership.class_id == klass.id)
        ).all()
        found = {user.username or "": (m.role, m.source, user.role) for m, user in rows}
    engine.dispose()
    return found


def test_a_launch_signs_in_joins_the_instructors_class_and_opens_the_set(world):
    with world.browser() as browser:
        arrived = world.launch(browser, "lena", "basics")
        assert arrived.status_code == 200
        assert arrived.url.path == "/sets/test-basics"
        assert "lena-" in arrived.text  # signed in: her new account's name in the header
    joined = members(world.database_url)
    lena = next(name for name in joined if name.startswith("lena-"))
    assert joined[lena] == ("learner", "lti", Role.LEARNER)
    assert joined["teach"][0] == "instructor"  # the class the link's code named got linked
    with world.browser() as other:  # a link with no custom set: its target_link_uri names it
        assert world.launch(other, "lena", "by-uri").url.path == "/sets/test-basics"
    assert sum(name.startswith("lena-") for name in members(world.database_url)) == 1


def test_an_instructor_launch_makes_an_instructor_of_the_class(world):
    with world.browser() as browser:
        world.launch(browser, "prof", "basics")
        prof = next(v for k, v in members(world.database_url).items() if k.startswith("pat-"))
        assert prof == ("instructor", "lti", Role.INSTRUCTOR)
        assert browser.get(world.class_url).status_code == 200  # may manage the class


REFUSALS = {
    "bad signature": ({"key": RSAKey.generate_key(2048, parameters={"kid": "platform-1"})},
                      "signature does not check"),
    "wrong audience": ({"aud": "another-tool"}, "not addressed to this tool"),
    "expired": ({"exp": 1_700_000_000, "iat": 1_699_999_000}, "expired"),
    "unknown deployment": ({CLAIM + "deployment_id": "deployment-9"}, "is not registered"),
    "another launch's nonce": ({"nonce": "an-old-nonce"}, "nonce does not match"),
    "deep linking": ({CLAIM + "message_type": "LtiDeepLinkingRequest"}, "resource-link"),
}  # fmt: skip


def test_a_forged_or_stale_launch_is_refused_with_its_reason(world):
    # One world for every case (a new platform and tool each would cost seconds apiece).
    for case, (changes, reason) in REFUSALS.items():
        with world.browser() as browser:
            asked = world.begin(browser, "lena", "basics")
            claims = {"nonce": asked["nonce"], **changes}
            token = world.platform.id_token("lena", "basics", **claims)
            refused = browser.post("/lti/launch", data={"id_token": token, "state": asked["state"]})
            assert refused.status_code == 400, case
            assert reason in refused.text, case
    assert members_or_none(world.database_url) is None  # nobody got in: no class was linked


def members_or_none(database_url: str) -> dict[str, object] | None:
    try:
        return dict(members(database_url))
    except Exception:  # no class linked yet: nobody joined
        return None


def test_a_replayed_launch_is_refused(world):
    with world.browser() as browser:
        asked = world.begin(browser, "lena", "basics")
        token = world.platform.id_token("lena", "basics", asked["nonce"])
        form = {"id_token": token, "state": asked["state"]}
        assert browser.post("/lti/launch", data=form).status_code == 303
        replayed = browser.post("/lti/launch", data=form)
        assert replayed.status_code == 400
        assert "used already" in replayed.text


def test_a_launch_finished_in_another_browser_does_not_sign_that_browser_in(world):
    with world.browser() as victim, world.browser() as attacker:
        asked = world.begin(attacker, "lena", "basics")
        token = world.platform.id_token("lena", "basics", asked["nonce"])
        posted = victim.post("/lti/launch", data={"id_token": token, "state": asked["state"]})
        assert posted.status_code == 303
        refused = victim.get(posted.headers["location"])
        assert refused.status_code == 400
        assert "another browser" in refused.text


def test_an_unknown_platform_is_told_how_to_register(world):
    with world.browser() as browser:
        response = browser.get(
            "/lti/login", params={"iss": "https://lms.example", "login_hint": "x",
                                  "target_link_uri": world.tool + "/"},
        )  # fmt: skip
        assert response.status_code == 400
        assert "ranklab lti add-platform" in response.text


def test_a_platform_that_rotated_its_key_is_refetched_on_the_new_kid(world, monkeypatch):
    monkeypatch.setattr(keys, "REFETCH_AFTER_S", 0.0)
    with world.browser() as browser:
        assert world.launch(browser, "lena", "basics").status_code == 200
        world.platform.key = RSAKey.generate_key(2048, parameters={"kid": "platform-2"})
        assert world.launch(browser, "lena", "basics").url.path == "/sets/test-basics"


def test_a_launch_left_unfinished_expires_and_is_cleared_later(world, clock):
    with world.browser() as browser:
        asked = world.begin(browser, "lena", "basics")
        clock.advance(11 * 60)  # the learner came back to the tab after a while
        token = world.platform.id_token("lena", "basics", asked["nonce"])
        late = browser.post("/lti/launch", data={"id_token": token, "state": asked["state"]})
        assert late.status_code == 400 and "took too long" in late.text
        clock.advance(2 * 3600)
        world.begin(browser, "lena", "basics")  # a new launch clears the stale states
        gone = browser.post("/lti/launch", data={"id_token": token, "state": asked["state"]})
        assert gone.status_code == 400 and "unknown here" in gone.text
