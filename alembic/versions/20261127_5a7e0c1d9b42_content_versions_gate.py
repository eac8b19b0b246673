"""content versions and the publish gate: every load of a set, topic or lab by content hash

An attempt keeps the version it started with (set_attempt.content_version), so a reload, a
file change or a restart never changes or takes away a question a learner has open. Attempts
from before have none and are served the live version, as before.

Revision ID: 5a7e0c1d9b42
Revises: ad1f66a9ec23
Create Date: 2026-11-27 03:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import app.db

revision: str = "5a7e0c1d9b42"
down_revision: str | None = "ad1f66a9ec23"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "content_version",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("unit_id", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("content_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("path", sqlmodel.sql.sqltypes.AutoString(length=400), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "live",
                "held",
                "superseded",
                name="versionstatus",
                native_enum=False,
                create_constraint=False,
                length=20,
            ),
            nullable=False,
        ),
        sa.Column("held_reason", sa.Text(), nullable=True),
        sa.Column("created_at", app.db.UTCDateTime(), nullable=False),
        sa.Column("published_at", app.db.UTCDateTime(), nullable=True),
        sa.Column("unproven", sa.Boolean(), nullable=False),
        sa.Column("published_by", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["published_by"], ["user_account.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("kind", "unit_id", "content_hash"),
    )
    with op.batch_alter_table("content_version", schema=None) as batch_op:
        batch_op.create_index("ix_content_version_unit_id", ["unit_id"], unique=False)
        batch_op.create_index("ix_content_version_status", ["status"], unique=False)
    with op.batch_alter_table("set_attempt", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("content_version", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )


def downgrade() -> None:
    """Undo this revision."""
    with op.batch_alter_table("set_attempt", schema=None) as batch_op:
        batch_op.drop_column("content_version")
    with op.batch_alter_table("content_version", schema=None) as batch_op:
        batch_op.drop_index("ix_content_version_status")
        batch_op.drop_index("ix_content_version_unit_id")
    op.drop_table("content_version")
