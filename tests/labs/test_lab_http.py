"""A lab over HTTP with a real executor (real gloo ranks): runs stream per rank and resume,
checks pass or fail on the real result, questions and checks unlock the next step, drafts
persist, limits refuse clearly, Stop kills the run."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.executor_client import HttpExecutorClient
from tests.conftest import FIXTURES
from tests.support.fake_executor import FakeExecutor
from tests.support.learner import Learner

STEP1 = "/labs/hello-ranks/steps/print-rank"
STEP2 = "/labs/hello-ranks/steps/all-reduce"
SOLUTION1 = (
    "import os\n"
    'rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])\n'
    'print(f"hello from rank {rank} of {world}")\n'
)


@pytest.fixture
def content(tmp_path: Path) -> Path:
    target = tmp_path / "challenges"
    shutil.copytree(FIXTURES / "labs" / "hello", target / "hello")
    return target


@pytest.fixture
def learner(app_factory, sqlite_url, content, executor_url) -> Iterator[Learner]:
    app = app_factory(
        sqlite_url,
        executor=HttpExecutorClient(executor_url),
        challenges_dir=content,
        lab_runs_per_learner="5/minute",
    )
    with TestClient(app) as client:
        person = Learner(client)
        person.start_as_guest()
        yield person


def run(person: Learner, url: str, code: str, nproc: int = 2):
    person.get(url)
    response = person.client.post(
        f"{url}/runs",
        data={"code": code, "nproc": str(nproc), "csrf_token": person.csrf},
        headers={"Accept": "application/json"},
    )
    return response


def events(
    person: Learner, url: str, last_event_id: int | None = None
) -> list[tuple[int, str, dict]]:
    headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
    text = person.client.get(url, headers=headers).text
    found = []
    for frame in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.splitlines())
        found.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
    return found


def test_a_step_runs_on_real_ranks_fails_then_passes_and_unlocks_the_next(learner: Learner):
    page = learner.get(STEP1).text
    assert "print(&#34;hello&#34;)" in page or "print(&quot;hello&quot;)" in page  # the starter
    assert learner.get(STEP2).status_code == 409  # locked until step 1 is passed
    started = run(learner, STEP1, 'import os\nprint("hello")\n')
    assert started.status_code == 201, started.text
    seen = events(learner, started.json()["events"])
    names = [name for _, name, _ in seen]
    assert names[-2:] == ["checks", "end"] and "result" in names
    outputs: dict[int, str] = {}
    for _, name, payload in seen:
        if name == "output":
            outputs[payload["rank"]] = outputs.get(payload["rank"], "") + payload["text"]
    assert outputs == {0: "hello\n", 1: "hello\n"}  # both ranks' panes fill
    checks = seen[-2][2]
    assert checks["passed"] is False
    assert [c["passed"] for c in checks["checks"]] == [False, False]
    # Resuming after the 3rd event gives exactly the rest (Last-Event-ID).
    rest = events(learner, started.json()["events"], last_event_id=seen[2][0])
    assert rest == seen[3:]
    # The draft is the code last run: a reload shows it, and the run's result.
    page = learner.get(STEP1).text
    assert 'data-passed="no"' in page and "hello\n</pre>" in page
    fixed = run(learner, STEP1, SOLUTION1)
    seen = events(learner, fixed.json()["events"])
    assert seen[-2][2]["passed"] is True
    page = learner.get(STEP1).text
    assert "answer the questions to finish the step" in page
    assert learner.get(STEP2).status_code == 409  # the question is still to answer
    wrong = learner.post(f"{STEP1}/questions/world-size-question/answer", {"choice": "3"})
    assert 'data-testid="question-wrong"' in wrong.text
    right = learner.post(f"{STEP1}/questions/world-size-question/answer", {"choice": "4"})
    assert 'data-testid="next-step"' in right.text
    step2 = learner.get(STEP2).text
    assert "hello from rank {rank} of {world}" in step2  # continues from the learner's code


def test_drafts_reset_and_hints_escalate_before_the_solution(learner: Learner):
    learner.get(STEP1)
    assert learner.post(f"{STEP1}/draft", {"code": "print('mine')\n"}).status_code == 204
    assert "print(&#39;mine&#39;)" in learner.get(STEP1).text
    assert 'data-testid="show-solution"' not in learner.get(STEP1).text
    # The step has two hints: one more after each failed run, then the solution.
    shown = []
    for _ in range(3):
        events(learner, run(learner, STEP1, "print('mine')\n").json()["events"])
        page = learner.get(STEP1).text
        shown.append((page.count('data-testid="lab-hint"'), 'data-testid="show-solution"' in page))
    assert shown == [(1, False), (2, False), (2, True)]
    page = learner.get(f"{STEP1}?show_solution=1").text
    assert 'data-testid="solution"' in page and "WORLD_SIZE" in page
    assert 'data-testid="show-solution"' not in page  # shown: no longer offered
    learner.post(f"{STEP1}/reset")
    assert "print(&#39;mine&#39;)" not in learner.get(STEP1).text


def test_a_run_of_the_starter_as_it_is_does_not_count_as_a_failure(learner: Learner):
    starter = 'import os\nprint("hello")\n'
    # "Press Run once as it is", and once more as a browser posts it (CRLF line endings).
    for code in (starter, starter.replace("\n", "\r\n")):
        started = run(learner, STEP1, code)
        judged = [payload for _, name, payload in events(learner, started.json()["events"])
                  if name == "checks"]  # fmt: skip
        assert [payload["passed"] for payload in judged] == [False]
    page = learner.get(STEP1).text
    assert 'data-testid="lab-hint"' not in page and 'data-testid="help-next"' not in page
    events(learner, run(learner, STEP1, starter + "# mine\n").json()["events"])
    assert learner.get(STEP1).text.count('data-testid="lab-hint"') == 1  # own code counts


def test_a_failed_check_is_said_in_plain_words_on_the_page(learner: Learner):
    started = run(learner, STEP1, 'print("hello")\n')
    checks = events(learner, started.json()["events"])[-2][2]["checks"]
    assert checks[0]["problems"][0] == (
        "rank 0 should print a line like `hello from rank <n> of <n>` (<n> stands for a "
        "number); it printed `hello`."
    )
    page = learner.get(STEP1).text
    assert "should print a line like <code>hello from rank &lt;n&gt; of &lt;n&gt;</code>" in page
    assert "\\d+" not in page and "stdout_regex" not in page


def test_limits_refuse_clearly(learner: Learner, app_factory, sqlite_url, content):
    too_big = run(learner, STEP1, "x = 1\n" * 5000)
    assert too_big.status_code == 400 and "at most 20000" in too_big.json()["detail"]
    wrong_ranks = run(learner, STEP1, SOLUTION1, nproc=3)
    assert wrong_ranks.status_code == 400 and "1, 2, 4 ranks" in wrong_ranks.json()["detail"]
    codes = []
    for _ in range(6):
        response = run(learner, STEP1, "print('hi')\n", nproc=1)
        codes.append(response.status_code)
        if response.status_code == 201:
            events(learner, response.json()["events"])
    assert codes == [201] * 5 + [429]
    assert "wait" in response.json()["detail"] and response.headers["Retry-After"]


def test_a_second_run_while_one_is_going_is_refused_and_stop_kills_it(learner: Learner):
    spin = "print('started', flush=True)\nwhile True:\n    pass\n"
    first = run(learner, STEP1, spin)
    assert first.status_code == 201
    second = run(learner, STEP1, SOLUTION1)
    assert second.status_code == 409 and "already have a run going" in second.json()["detail"]
    run_id = first.json()["run_id"]
    stopped = learner.client.post(
        f"/labs/runs/{run_id}/stop", headers={"X-CSRF-Token": learner.csrf}
    )
    assert stopped.status_code == 200
    names = [name for _, name, _ in events(learner, first.json()["events"])]
    assert "stopped" in names and names[-1] == "end"
    assert run(learner, STEP1, SOLUTION1).status_code == 201  # free to run again


def test_a_lab_refuses_to_run_without_the_sandbox(app_factory, sqlite_url, content):
    class Trusted(FakeExecutor):
        def health(self):
            return {"status": "ok", "sandbox": "trusted"}

    app = app_factory(sqlite_url, executor=Trusted(), challenges_dir=content)
    with TestClient(app) as client:
        person = Learner(client)
        person.start_as_guest()
        refused = run(person, STEP1, SOLUTION1)
        assert refused.status_code == 503
        assert "only runs in the sandbox, and it is trusted" in refused.json()["detail"]
        # The page's own form post (no JavaScript) gets the same status, as an HTML page.
        page = person.post(f"{STEP1}/runs", {"code": SOLUTION1, "nproc": "2"})
        assert page.status_code == 503 and "only runs in the sandbox" in page.text


def test_another_learners_run_is_not_theirs_to_read_or_stop(learner: Learner, app_factory):
    started = run(learner, STEP1, SOLUTION1)
    events(learner, started.json()["events"])
    with TestClient(learner.client.app) as client:
        other = Learner(client)
        other.start_as_guest()
        assert other.client.get(started.json()["events"]).status_code == 404
        stop = other.client.post(
            f"/labs/runs/{started.json()['run_id']}/stop", headers={"X-CSRF-Token": other.csrf}
        )
        assert stop.status_code == 404
    assert re.search(r"Last run: finished", learner.get(STEP1).text)


def test_hostile_lab_code_is_contained(learner: Learner, secret_dir: Path):
    from executor.settings import PACKAGE_PARENT
    from tests.executor.test_hostile import HOSTILE
    from tests.support.executor import CANARY

    snoop = (
        (HOSTILE / "read_secrets.py")
        .read_text()
        .replace("__CANARY_FILE__", str(secret_dir / "secret.txt"))
        .replace("__REPO__", str(PACKAGE_PARENT))
    )
    seen = events(learner, run(learner, STEP1, snoop, nproc=1).json()["events"])
    result = next(payload for _, name, payload in seen if name == "result")
    assert result["status"] == "ok"
    everything = json.dumps(seen)
    assert CANARY not in everything  # neither the app's environment nor its files
    assert f"{secret_dir / 'secret.txt'} blocked: FileNotFoundError" in result["ranks"][0]["stdout"]
    bomb = (HOSTILE / "fork_bomb.py").read_text()
    seen = events(learner, run(learner, STEP1, bomb, nproc=1).json()["events"])
    result = next(payload for _, name, payload in seen if name == "result")
    assert result["status"] == "timeout"  # the step's limit ends it; the pids cgroup caps it
    after = events(learner, run(learner, STEP1, SOLUTION1).json()["events"])
    assert after[-2][2]["passed"] is True  # and the next run works


DEADLOCK = (
    "import torch, torch.distributed as dist\n"
    "dist.init_process_group('gloo')\n"
    "if dist.get_rank() == 0:\n"
    "    dist.all_reduce(torch.ones(1))\n"
    "else:\n"
    "    dist.barrier()\n"
)


def test_a_run_that_hangs_shows_where_each_rank_was_stuck(app_factory, sqlite_url, content,
                                                          executor_url):  # fmt: skip
    lab = content / "hello" / "lab.yaml"
    lab.write_text(lab.read_text().replace("timeout_s: 20}", "timeout_s: 3}", 1))
    app = app_factory(sqlite_url, executor=HttpExecutorClient(executor_url), challenges_dir=content)
    with TestClient(app) as client:
        person = Learner(client)
        person.start_as_guest()
        seen = events(person, run(person, STEP1, DEADLOCK).json()["events"])
        result = next(payload for _, name, payload in seen if name == "result")
        assert result["status"] == "timeout"
        page = person.get(STEP1).text  # the panes of the last run, as the page shows them
    assert "Stuck at line 4, waiting in dist.all_reduce when the time limit stopped it." in page
    assert "Stuck at line 6, waiting in dist.barrier when the time limit stopped it." in page


def test_a_finished_lab_says_what_was_learned_and_leads_on(app_factory, sqlite_url, content):
    from datetime import UTC, datetime

    from sqlmodel import Session, select

    from app.accounts.models import User
    from app.labs.models import LabStepState

    app = app_factory(sqlite_url, executor=FakeExecutor(), challenges_dir=content)
    with TestClient(app) as client:
        person = Learner(client)
        person.start_as_guest()
        assert 'data-testid="lab-done"' not in person.get("/labs/hello-ranks").text
        now = datetime(2026, 1, 1, tzinfo=UTC)
        with Session(app.state.engine) as session:
            (user_id,) = session.exec(select(User.id)).all()
            assert user_id is not None
            times = {"updated_at": now, "checks_passed_at": now, "passed_at": now}
            for step in ("print-rank", "all-reduce"):  # both steps passed
                session.add(
                    LabStepState(user_id=user_id, lab_id="hello-ranks", step_id=step, **times)
                )
            session.commit()
        page = person.get("/labs/hello-ranks").text
    assert 'data-testid="lab-done"' in page and "What you learned" in page
    learned = page[page.index('data-testid="lab-learned"') :]
    assert "Every rank says hello" in learned and "Add the ranks up" in learned
    # Its lab is all this course has: the path's next step is that there is none left.
    assert 'data-testid="next-suggestion">You have finished every step of every topic' in page


def test_a_rank_killed_for_a_peers_overflow_says_why(learner: Learner):
    """Rank 0 prints past the output limit while rank 1 waits: rank 1 is killed with the run,
    and its pane says why instead of a bare "killed"."""
    code = (
        "import os, time\n"
        "if os.environ['RANK'] == '0':\n"
        "    print('x' * 200_000, flush=True)\n"
        "time.sleep(30)\n"
    )
    started = run(learner, STEP1, code)
    seen = events(learner, started.json()["events"])
    result = next(payload for _, name, payload in seen if name == "result")
    assert result["status"] == "output_limit"
    assert result["rank_words"]["1"] == "killed: rank 0 printed more than 64 KiB"
    assert result["rank_words"]["0"] == "killed: it printed more than 64 KiB"
    page = learner.get(STEP1).text
    assert "killed: rank 0 printed more than 64 KiB" in page
