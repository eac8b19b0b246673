"""Import every table so that SQLModel.metadata knows them all (for Alembic and tests)."""

from app.accounts.models import User, WebSession
from app.attempts.models import ItemAttempt, SetAttempt, Submission
from app.classes.models import Assignment, Extension, Klass, Membership
from app.labs.models import LabRun, LabStepState
from app.lessons.models import LessonProgress
from app.lti.models import (
    LtiAccount,
    LtiContext,
    LtiLaunchState,
    LtiPlatform,
    LtiResourceLink,
    LtiScoreOutbox,
    LtiToolKey,
)
from app.modes.models import ModeAnswer, Quiz
from app.publishing.models import ContentVersion
from app.review.models import ReviewCard, ReviewLog
from app.verification.models import VerificationRecord

__all__ = [
    "Assignment",
    "ContentVersion",
    "Extension",
    "ItemAttempt",
    "Klass",
    "LabRun",
    "LabStepState",
    "LessonProgress",
    "LtiAccount",
    "LtiContext",
    "LtiLaunchState",
    "LtiPlatform",
    "LtiResourceLink",
    "LtiScoreOutbox",
    "LtiToolKey",
    "Membership",
    "ModeAnswer",
    "Quiz",
    "ReviewCard",
    "ReviewLog",
    "SetAttempt",
    "Submission",
    "User",
    "VerificationRecord",
    "WebSession",
]
