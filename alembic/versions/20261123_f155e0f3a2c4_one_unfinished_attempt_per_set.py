"""one unfinished attempt per learner and set

Parallel "Start" clicks could create several unfinished attempts for one learner and one set
(PostgreSQL, before this index). Those are merged first, or the unique index could not be built:
the attempt with the most answers (then the newest) stays open; another one that holds answers is
finished as it stands, at its last answer, so no answer is lost; one without answers is deleted.

Revision ID: f155e0f3a2c4
Revises: 194ff31b24a9
Create Date: 2026-11-23 12:05:42.062430
"""

from collections import defaultdict
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.db

revision: str = "f155e0f3a2c4"
down_revision: str | None = "194ff31b24a9"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UNFINISHED = sa.text("finished_at IS NULL")

set_attempt = sa.table(
    "set_attempt",
    sa.column("id", sa.Integer()),
    sa.column("user_id", sa.Integer()),
    sa.column("set_id", sa.String()),
    sa.column("finished_at", app.db.UTCDateTime()),
    sa.column("correct_count", sa.Integer()),
)
item_attempt = sa.table(
    "item_attempt",
    sa.column("id", sa.Integer()),
    sa.column("set_attempt_id", sa.Integer()),
    sa.column("status", sa.String()),
)
submission = sa.table(
    "submission",
    sa.column("id", sa.Integer()),
    sa.column("item_attempt_id", sa.Integer()),
    sa.column("submitted_at", app.db.UTCDateTime()),
)


def upgrade() -> None:
    """Apply this revision."""
    _merge_duplicate_unfinished_attempts(op.get_bind())
    with op.batch_alter_table("set_attempt", schema=None) as batch_op:
        batch_op.create_index(
            "uq_set_attempt_one_unfinished",
            ["user_id", "set_id"],
            unique=True,
            postgresql_where=UNFINISHED,
            sqlite_where=UNFINISHED,
        )


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("set_attempt", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_set_attempt_one_unfinished",
            postgresql_where=UNFINISHED,
            sqlite_where=UNFINISHED,
        )


def _merge_duplicate_unfinished_attempts(connection: sa.Connection) -> None:
    """Leave at most one unfinished attempt per learner and set (see the module docstring)."""
    unfinished = connection.execute(
        sa.select(set_attempt.c.id, set_attempt.c.user_id, set_attempt.c.set_id)
        .where(set_attempt.c.finished_at.is_(None))
        .order_by(set_attempt.c.id)
    ).all()
    groups: dict[tuple[int, str], list[int]] = defaultdict(list)
    for attempt_id, user_id, set_id in unfinished:
        groups[(user_id, set_id)].append(attempt_id)
    for ids in groups.values():
        if len(ids) < 2:
            continue
        answers = {attempt_id: _answers(connection, attempt_id) for attempt_id in ids}
        kept = max(ids, key=lambda attempt_id: (answers[attempt_id][0], attempt_id))
        for attempt_id in ids:
            count, last_answer_at = answers[attempt_id]
            if attempt_id == kept:
                continue
            if count == 0:
                connection.execute(
                    item_attempt.delete().where(item_attempt.c.set_attempt_id == attempt_id)
                )
                connection.execute(set_attempt.delete().where(set_attempt.c.id == attempt_id))
                continue
            correct = connection.execute(
                sa.select(sa.func.count())
                .select_from(item_attempt)
                .where(item_attempt.c.set_attempt_id == attempt_id)
                .where(item_attempt.c.status == "correct")
            ).scalar_one()
            connection.execute(
                set_attempt.update()
                .where(set_attempt.c.id == attempt_id)
                .values(finished_at=last_answer_at, correct_count=correct)
            )


def _answers(connection: sa.Connection, attempt_id: int) -> tuple[int, object]:
    """Count an attempt's submitted answers and find when the last one came."""
    count, last = connection.execute(
        sa.select(sa.func.count(submission.c.id), sa.func.max(submission.c.submitted_at))
        .select_from(
            submission.join(item_attempt, submission.c.item_attempt_id == item_attempt.c.id)
        )
        .where(item_attempt.c.set_attempt_id == attempt_id)
    ).one()
    return int(count), last
