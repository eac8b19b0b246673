"""cards undo: each review log keeps the card's state before it, so the last grade can be undone

Logs written before this revision have no such state (NULL) and cannot be undone.

Revision ID: c4a2d9e1b7f3
Revises: 5a7e0c1d9b42
Create Date: 2026-11-27 03:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.db

revision: str = "c4a2d9e1b7f3"
down_revision: str | None = "5a7e0c1d9b42"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("review_log", schema=None) as batch_op:
        batch_op.add_column(sa.Column("state_before", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("step_before", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("stability_before", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("difficulty_before", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("last_review_before", app.db.UTCDateTime(), nullable=True))
        batch_op.add_column(
            sa.Column("created_card", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("review_log", schema=None) as batch_op:
        for column in ("created_card", "last_review_before", "difficulty_before",
                       "stability_before", "step_before", "state_before"):  # fmt: skip
            batch_op.drop_column(column)
