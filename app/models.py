"""Import every table so that SQLModel.metadata knows them all (for Alembic and tests)."""

from app.accounts.models import User, WebSession
from app.attempts.models import ItemAttempt, SetAttempt, Submission
from app.labs.models import LabRun, LabStepState
from app.modes.models import ModeAnswer, Quiz
from app.publishing.models import ContentVersion
from app.review.models import ReviewCard, ReviewLog
from app.verification.models import VerificationRecord

__all__ = [
    "ContentVersion",
    "ItemAttempt",
    "LabRun",
    "LabStepState",
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
