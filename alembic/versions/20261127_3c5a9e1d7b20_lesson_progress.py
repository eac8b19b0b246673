"""lesson progress: each learner's predictions in a topic's lesson and its passed check

Revision ID: 3c5a9e1d7b20
Revises: c4a2d9e1b7f3
Create Date: 2026-11-27 03:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.db

revision: str = "3c5a9e1d7b20"
down_revision: str | None = "c4a2d9e1b7f3"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "lesson_progress",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("topic_id", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("step", sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=False),
        sa.Column("completed_at", app.db.UTCDateTime(), nullable=True),
        sa.Column("answered_at", app.db.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user_account.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "topic_id", "step"),
    )
    with op.batch_alter_table("lesson_progress", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lesson_progress_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("lesson_progress", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lesson_progress_user_id"))
    op.drop_table("lesson_progress")
