"""lab progress keeps the lab's version it started on (lab_step_state.content_version)

A learner's steps are served and judged by the lab's version (content hash) their first step
started on, whatever a Reload publishes meanwhile, as a timed attempt keeps its set's. Progress
from before has none and follows the live version, as before. (Practice, explain-it and quick
quizzes need no column: a question's page carries its deck's version, and a quiz keeps each
question's in its `questions` JSON.)

Revision ID: 9b3e6f2a4c81
Revises: 3c5a9e1d7b20
Create Date: 2026-11-27 07:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "9b3e6f2a4c81"
down_revision: str | None = "3c5a9e1d7b20"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("lab_step_state", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("content_version", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("lab_step_state", schema=None) as batch_op:
        batch_op.drop_column("content_version")
