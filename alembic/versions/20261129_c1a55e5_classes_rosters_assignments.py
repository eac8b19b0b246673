"""classes: sections, memberships, assignments with dates and per-learner extensions

Revision ID: c1a55e5_classes
Revises: variant_first_sight_35
Create Date: 2026-11-29 07:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.db

revision: str = "c1a55e5_classes"
down_revision: str | None = "variant_first_sight_35"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    op.create_table(
        "class_section",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("join_code", sa.String(length=16), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=False),
        sa.Column("created_at", app.db.UTCDateTime(), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("lti_platform_issuer", sa.String(length=300), nullable=True),
        sa.Column("lti_deployment_id", sa.String(length=300), nullable=True),
        sa.Column("lti_context_id", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(["created_by"], ["user_account.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("lti_platform_issuer", "lti_deployment_id", "lti_context_id"),
    )
    op.create_index("ix_class_section_join_code", "class_section", ["join_code"], unique=True)
    op.create_table(
        "class_membership",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("class_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("student_id", sa.String(length=100), nullable=True),
        sa.Column("email", sa.String(length=200), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("joined_at", app.db.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["class_id"], ["class_section.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["user_account.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("class_id", "user_id"),
    )
    op.create_index("ix_class_membership_class_id", "class_membership", ["class_id"])
    op.create_index("ix_class_membership_user_id", "class_membership", ["user_id"])
    op.create_table(
        "class_assignment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("class_id", sa.Integer(), nullable=False),
        sa.Column("set_id", sa.String(length=100), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("open_at", app.db.UTCDateTime(), nullable=False),
        sa.Column("due_at", app.db.UTCDateTime(), nullable=False),
        sa.Column("close_at", app.db.UTCDateTime(), nullable=False),
        sa.Column("attempt_limit", sa.Integer(), nullable=True),
        sa.Column("late_penalty_per_day", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["class_id"], ["class_section.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_class_assignment_class_id", "class_assignment", ["class_id"])
    op.create_index("ix_class_assignment_set_id", "class_assignment", ["set_id"])
    op.create_table(
        "class_extension",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("time_multiplier", sa.Float(), nullable=True),
        sa.Column("due_at", app.db.UTCDateTime(), nullable=True),
        sa.Column("close_at", app.db.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["assignment_id"], ["class_assignment.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["user_account.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("assignment_id", "user_id"),
    )
    op.create_index("ix_class_extension_assignment_id", "class_extension", ["assignment_id"])
    op.create_index("ix_class_extension_user_id", "class_extension", ["user_id"])


def downgrade() -> None:
    """Undo this revision."""
    for table in ("class_extension", "class_assignment", "class_membership", "class_section"):
        op.drop_table(table)
