"""Bad requests get clear 4xx answers; posts without a CSRF token are refused."""

from tests.support.learner import Learner


def test_a_post_without_the_csrf_token_is_refused(client):
    client.get("/")
    response = client.post("/guest", data={"next": "/"})
    assert response.status_code == 403
    assert "did not come from this site" in response.text


def test_a_post_with_a_forged_csrf_token_is_refused(client):
    client.get("/")
    response = client.post("/guest", data={"csrf_token": "0" * 64})
    assert response.status_code == 403


def test_pages_that_need_a_user_send_guests_to_log_in(client):
    response = client.get("/me/progress", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login")


def test_the_api_answers_json_errors(client):
    response = client.get("/api/attempts/1/q/1")
    assert response.status_code == 401
    assert response.json() == {"detail": "Please start as a guest or log in"}


def test_an_invalid_answer_is_a_400_with_a_message(client):
    learner = Learner(client)
    learner.start_as_guest()
    attempt = learner.start("test-basics")
    response = learner.answer(attempt, 1, "Z")
    assert response.status_code == 400
    assert "not one of the options" in response.text


def test_an_unknown_set_is_a_404_page(client):
    response = client.get("/sets/no-such-set")
    assert response.status_code == 404
    assert "No challenge set" in response.text


def test_a_non_numeric_attempt_id_is_a_422_with_a_message(client):
    Learner(client).start_as_guest()
    response = client.get("/attempts/abc", headers={"accept": "application/json"})
    assert response.status_code == 422
    assert "attempt_id" in response.json()["detail"]
