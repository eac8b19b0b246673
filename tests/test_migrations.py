"""Alembic is the only way the schema changes: head matches the models on SQLite and PostgreSQL."""

from datetime import UTC, datetime, timedelta

from sqlalchemy import insert, inspect
from sqlmodel import Session, select

from app import migrations
from app.accounts.models import User
from app.attempts.models import ItemAttempt, SetAttempt, Submission
from app.attempts.rules import ItemStatus
from app.db import make_engine


def test_every_revision_runs_up_from_nothing_down_to_base_and_up_again(empty_database_url):
    """The other tests get copies of a migrated template: here the migrations themselves run."""
    migrations.upgrade(empty_database_url)
    assert migrations.check(empty_database_url) == 0
    migrations.downgrade(empty_database_url, "base")
    engine = make_engine(empty_database_url)
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    engine.dispose()
    migrations.upgrade(empty_database_url)
    assert migrations.check(empty_database_url) == 0


def test_upgrade_head_then_check_finds_nothing_to_generate(database_url, capsys):
    assert migrations.check(database_url) == 0
    engine = make_engine(database_url)
    tables = set(inspect(engine).get_table_names())
    engine.dispose()
    expected = {"user_account", "web_session", "set_attempt", "item_attempt", "submission"}
    assert expected | {"verification_record"} <= tables


def test_upgrading_twice_is_harmless(database_url):
    migrations.upgrade(database_url)
    assert migrations.check(database_url) == 0


def test_duplicate_unfinished_attempts_are_merged_before_the_unique_index(database_url):
    """Parallel starts left several unfinished attempts: keep the most answered, lose no answer."""
    migrations.downgrade(database_url, "194ff31b24a9")
    engine = make_engine(database_url)
    started = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    with Session(engine) as session:
        user = User(username="ada", is_guest=False, created_at=started)
        session.add(user)
        session.flush()
        attempts = []
        for answered in (1, 2, 0):  # three unfinished attempts at one set, from parallel starts
            # Core, naming only the columns of that revision (no content version yet).
            attempt_id = session.execute(
                insert(SetAttempt)
                .values(
                    user_id=user.id,
                    set_id="s",
                    set_title="S",
                    item_ids="a,b",
                    started_at=started,
                    current_position=0,
                    correct_count=0,
                    badge_earned=False,
                )
                .returning(SetAttempt.id)  # type: ignore[arg-type]
            ).scalar_one()
            for position in range(2):
                status = ItemStatus.CORRECT if position < answered else ItemStatus.OPEN
                # Core, naming only the columns of that revision (no variant key yet).
                row_id = session.execute(
                    insert(ItemAttempt)
                    .values(
                        set_attempt_id=attempt_id,
                        item_id="ab"[position],
                        position=position,
                        attempts_allowed=2,
                        attempts_used=0,
                        status=status,
                    )
                    .returning(ItemAttempt.id)  # type: ignore[arg-type]
                ).scalar_one()
                if position < answered:
                    submitted = started + timedelta(minutes=position + 1)
                    # Core, naming only the columns of that revision (no submission token yet).
                    session.execute(
                        insert(Submission).values(
                            item_attempt_id=row_id,
                            number=1,
                            answer="A",
                            correct=True,
                            submitted_at=submitted,
                        )
                    )
            attempts.append(attempt_id)
        session.commit()
    migrations.upgrade(database_url)
    with Session(engine) as session:
        rows = {row.id: row for row in session.exec(select(SetAttempt))}
    engine.dispose()
    once, twice, never = attempts
    assert never not in rows  # nothing answered: deleted
    assert rows[twice].finished_at is None  # the most answered stays open
    assert rows[once].finished_at == started + timedelta(minutes=1)  # finished at its last answer
    assert rows[once].correct_count == 1
    assert migrations.check(database_url) == 0
