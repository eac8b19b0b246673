"""One Settings object, read from RANKLAB_* environment variables (or a .env file)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER_SECRET = "change-me-in-production"


class Settings(BaseSettings):
    """Everything the app can be configured with; defaults suit `make run` on a laptop."""

    model_config = SettingsConfigDict(env_prefix="RANKLAB_", env_file=".env", extra="ignore")

    environment: Literal["development", "test", "production"] = "development"
    database_url: str = Field(
        default=f"sqlite:///{ROOT / 'var' / 'ranklab.db'}",
        validation_alias="DATABASE_URL",
        description="SQLAlchemy URL; postgres:// and postgresql:// are normalised to psycopg 3.",
    )
    challenges_dir: Path = ROOT / "challenges"
    secret_key: str = PLACEHOLDER_SECRET
    cookie_secure: bool = False
    session_days: int = 30
    grace_seconds: float = Field(
        default=3.0,
        ge=0,
        le=30,
        description="Extra seconds after a deadline during which an answer still counts.",
    )
    executor_url: str | None = Field(
        default=None,
        description="An executor service to use (RANKLAB_EXECUTOR_URL). Unset, `ranklab serve` "
        "starts its own next to the app, on a free loopback port with a token made per start.",
    )
    executor_timeout_s: float = 60.0
    executor_token: str | None = Field(
        default=None,
        description="The executor's shared secret (RANKLAB_EXECUTOR_TOKEN, the same variable "
        "the executor reads); required by an executor that listens beyond loopback.",
    )

    @field_validator("database_url")
    @classmethod
    def _normalise_postgres(cls, url: str) -> str:
        for prefix in ("postgres://", "postgresql://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url.removeprefix(prefix)
        return url

    @model_validator(mode="after")
    def _no_placeholder_secret_in_production(self) -> Settings:
        if self.environment == "production" and self.secret_key == PLACEHOLDER_SECRET:
            raise ValueError("set RANKLAB_SECRET_KEY to a long random value in production")
        return self

    @property
    def is_sqlite(self) -> bool:
        """Whether the database is an SQLite file."""
        return self.database_url.startswith("sqlite")
