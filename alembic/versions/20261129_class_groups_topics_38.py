"""classes, part two: groups with their extensions, and topic assignments

class_group, class_group_member: named groups of a class's learners. class_group_extension: a
group's dates and time multiplier for one assignment (a learner's own extension wins over it).
class_assignment.topic_id: an assignment of a whole topic (its set_id is then "").

Revision ID: class_groups_topics_38
Revises: c1a55e5_classes
Create Date: 2026-11-29 10:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import app.db

revision: str = "class_groups_topics_38"
down_revision: str | None = "c1a55e5_classes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Apply this revision."""
    with op.batch_alter_table("class_assignment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("topic_id", sa.String(length=100), nullable=True))
    op.create_table(
        "class_group",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("class_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.ForeignKeyConstraint(["class_id"], ["class_section.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("class_id", "name"),
    )
    op.create_index("ix_class_group_class_id", "class_group", ["class_id"])
    op.create_table(
        "class_group_member",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["group_id"], ["class_group.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["user_account.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("group_id", "user_id"),
    )
    op.create_index("ix_class_group_member_group_id", "class_group_member", ["group_id"])
    op.create_index("ix_class_group_member_user_id", "class_group_member", ["user_id"])
    op.create_table(
        "class_group_extension",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("time_multiplier", sa.Float(), nullable=True),
        sa.Column("due_at", app.db.UTCDateTime(), nullable=True),
        sa.Column("close_at", app.db.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["assignment_id"], ["class_assignment.id"]),
        sa.ForeignKeyConstraint(["group_id"], ["class_group.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("assignment_id", "group_id"),
    )
    op.create_index(
        "ix_class_group_extension_assignment_id", "class_group_extension", ["assignment_id"]
    )
    op.create_index("ix_class_group_extension_group_id", "class_group_extension", ["group_id"])


def downgrade() -> None:
    """Undo this revision."""
    for table in ("class_group_extension", "class_group_member", "class_group"):
        op.drop_table(table)
    with op.batch_alter_table("class_assignment", schema=None) as batch_op:
        batch_op.drop_column("topic_id")
