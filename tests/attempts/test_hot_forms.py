"""The class flow's forms (Start, an answer, Next) are plain routes (app.deps.form_route): they
refuse what FastAPI's parameters refused, in the same order, with the same status and message."""

from __future__ import annotations

from tests.support.learner import Learner

JSON = {"accept": "application/json"}
TOKEN = "a-valid-submission-token-0001"


def _started(client) -> tuple[Learner, str]:
    learner = Learner(client)
    learner.start_as_guest()
    return learner, learner.start("test-basics")


def test_a_non_numeric_id_in_a_form_route_is_a_422_naming_it(client):
    learner, attempt = _started(client)
    resume = learner.get("/attempts/x1", headers=JSON)  # Resume's redirect, checked alike
    assert resume.status_code == 422 and resume.json()["detail"].startswith("attempt_id: Input")
    for path, name in (
        ("/attempts/abc/q/1/answer", "attempt_id"),
        (f"{attempt}/q/1e3/answer", "number"),
        ("/attempts/x1/next", "attempt_id"),
    ):
        response = learner.post(path, {"choice": ["B"]}, headers=JSON)
        assert response.status_code == 422, (path, response.text)
        assert response.json()["detail"] == (
            f"{name}: Input should be a valid integer, unable to parse string as an integer"
        )


def test_a_malformed_answer_field_is_a_422_naming_it_and_counts_nothing(client):
    learner, attempt = _started(client)
    refused = [
        ({"submission": "short"}, "submission: String should have at least 16 characters"),
        ({"submission": "no spaces allowed in it!"}, "submission: String should match pattern"),
        ({"submission": TOKEN, "first_sent": "x" * 101}, "first_sent: String should have at most"),
    ]
    for fields, message in refused:
        response = learner.post(f"{attempt}/q/1/answer", {"choice": ["B"], **fields}, headers=JSON)
        assert response.status_code == 422, response.text
        assert response.json()["detail"].startswith(message)
    question = learner.get(f"/api{attempt}/q/1").json()["question"]
    assert question["attempts_used"] == 0 and question["status"] == "open"  # nothing counted


def test_an_empty_optional_field_is_absent_as_fastapi_reads_forms(client):
    learner, attempt = _started(client)
    # An empty token is no token (FastAPI's Form() default): judged, not refused.
    response = learner.post(
        f"{attempt}/q/1/answer", {"choice": "Z", "submission": "", "first_sent": ""}
    )
    assert response.status_code == 400 and "not one of the options" in response.text
    no_choice = learner.post(f"{attempt}/q/1/answer", {"submission": TOKEN})
    assert no_choice.status_code == 400  # no option chosen: an invalid answer, not a 422


def test_a_visitor_not_signed_in_is_sent_to_log_in_before_the_id_is_checked(client):
    learner = Learner(client)
    learner.get("/")
    for path in ("/attempts/1/q/1/answer", "/attempts/abc/next"):
        response = learner.post(path, {"choice": ["B"]}, follow_redirects=False)
        assert response.status_code == 303, (path, response.text)
        assert response.headers["location"] == f"/login?next={path}"
    resume = learner.get("/attempts/abc", follow_redirects=False)  # Resume's redirect, a GET
    assert resume.status_code == 303 and resume.headers["location"] == "/login?next=/attempts/abc"


def test_the_csrf_token_is_checked_before_anything_else(client):
    _, attempt = _started(client)
    for path in (f"{attempt}/q/abc/answer", f"{attempt}/next", "/sets/test-basics/start"):
        response = client.post(path, data={"csrf_token": "0" * 64, "choice": ["B"]})
        assert response.status_code == 403, (path, response.text)
        assert "did not come from this site" in response.text
