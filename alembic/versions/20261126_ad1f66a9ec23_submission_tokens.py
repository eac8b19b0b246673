"""submission tokens: an answer sent twice (a retry after a time-out) is stored once

Each answer form carries a fresh random token; the unique index makes the database the judge of
a retry racing its original. Existing submissions have none (NULL: never equal to another).

Revision ID: ad1f66a9ec23
Revises: ef506ca030ee
Create Date: 2026-11-26 21:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "ad1f66a9ec23"
down_revision: str | None = "ef506ca030ee"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("token", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )
        batch_op.create_index("uq_submission_token", ["token"], unique=True)


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.drop_index("uq_submission_token")
        batch_op.drop_column("token")
