"""variants served to learners, and the first time each learner saw each one

item_attempt.variant_key: the variant of its item a timed question showed ("" for an item
without parameters). item_sighting: the first time a learner was shown an item's variant
(timed, practice, review, quick quiz), and in which timed attempt if it was one; a badge counts
a question only where its variant was first shown in that attempt.

Revision ID: variant_first_sight_35
Revises: e7d41b9c2a65
Create Date: 2026-11-29 06:45:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.db

revision: str = "variant_first_sight_35"
down_revision: str | None = "e7d41b9c2a65"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("item_attempt", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "variant_key",
                sqlmodel.sql.sqltypes.AutoString(length=64),
                nullable=False,
                server_default="",
            )
        )
    op.create_table(
        "item_sighting",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("set_id", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("item_id", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("variant_key", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("mode", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("set_attempt_id", sa.Integer(), nullable=True),
        sa.Column("shown_at", app.db.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user_account.id"]),
        sa.ForeignKeyConstraint(["set_attempt_id"], ["set_attempt.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "set_id", "item_id", "variant_key"),
    )


def downgrade() -> None:
    """Undo this revision."""
    op.drop_table("item_sighting")
    with op.batch_alter_table("item_attempt", schema=None) as batch_op:
        batch_op.drop_column("variant_key")
