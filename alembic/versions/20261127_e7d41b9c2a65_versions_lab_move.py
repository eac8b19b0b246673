"""a learner may move their lab progress to a newer version of the lab

lab_step_state.restarted_at: a step whose content the newer version changed starts over; its
questions answered before then no longer count. lab_step_state.stayed_on: the newer version
the learner chose not to move to (the lab page stops urging it; a later version asks again).

Revision ID: e7d41b9c2a65
Revises: 9b3e6f2a4c81
Create Date: 2026-11-27 10:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.db

revision: str = "e7d41b9c2a65"
down_revision: str | None = "9b3e6f2a4c81"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("lab_step_state", schema=None) as batch_op:
        batch_op.add_column(sa.Column("restarted_at", app.db.UTCDateTime(), nullable=True))
        batch_op.add_column(
            sa.Column("stayed_on", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("lab_step_state", schema=None) as batch_op:
        batch_op.drop_column("stayed_on")
        batch_op.drop_column("restarted_at")
