"""One Settings object, read from RANKLAB_* environment variables (or a .env file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import limits
from pydantic import Field, PrivateAttr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app import secret_file

ROOT = Path(__file__).resolve().parents[1]
# The value once shipped as the default: public, so it counts as no secret at all.
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
    database_pool_size: int = Field(
        default=40,
        ge=1,
        le=1000,
        description="Database connections kept per process. The default, 40, is one per worker "
        "thread that runs pages (anyio's default), so no page waits for a connection. On "
        "PostgreSQL half of them serve the event loop (page reads and queued writes, through "
        "psycopg's asyncio driver) and half the worker threads, which are limited to as many; "
        "processes × this must stay under the server's max_connections.",
    )
    sqlite_synchronous: Literal["full", "normal"] = Field(
        default="full",
        description="SQLite only: full puts every write on disk before it is acknowledged "
        "(an answer survives a power cut), with one flush for each turn of queued writes "
        "(a group commit); normal leaves flushing to WAL checkpoints (a write survives the "
        "app's crash, not the machine's) and saves the event loop those flushes.",
    )
    write_wait_s: float = Field(
        default=0.9,
        gt=0,
        le=30,
        description="The longest a write (an answer, a start) waits for its turn before the "
        "app answers 503 with Retry-After and a page that sends it again by itself; nothing "
        "of a refused write is stored. Counted from the request's arrival: its wait for "
        "admission comes off it.",
    )
    admission_limit: int | None = Field(
        default=None,
        ge=1,
        le=10000,
        description="Hot pages and forms (home, Start, a question, an answer, Next, resume, "
        "progress) worked on at once per process; the others wait their turn in order, at "
        "most write_wait_s, then go in anyway (app.admission). Unset: 16 on PostgreSQL, no "
        "limit on SQLite, whose reads never wait and whose writes are one writer's turns.",
    )
    write_lanes: int = Field(
        default=8,
        ge=1,
        le=1000,
        description="Writes run at once per process on PostgreSQL, each on a connection of "
        "its own: at most a quarter of the pool size (app.db.LoopEngines). SQLite runs one "
        "at a time.",
    )
    challenges_dir: Path = ROOT / "challenges"
    content_gate: Literal["proven", "valid"] = Field(
        default="proven",
        description="What a load publishes to learners (docs/authoring.md, Publishing): proven "
        "publishes a new or changed set, topic or lab only when its keys are proven for that "
        "exact content (a Verify pass in the database or challenges/proofs.json), else holds "
        "it and keeps the last live version; valid publishes whatever validates (a course "
        "being drafted, the tests). Either way a broken file keeps its last live version.",
    )
    content_check_s: float = Field(
        default=2.0,
        ge=0,
        description="How often (seconds) each process looks for a version another process "
        "published (a Reload in one of several workers): one small query, then the new live "
        "versions are served from the database. 0: on every request.",
    )
    lti_send_interval_s: float = Field(
        default=5.0,
        ge=0,
        description="How often (seconds) each process sends the scores owed to LMSs over LTI "
        "(the score outbox); 0: never by itself (only the class page's Send grades).",
    )
    state_dir: Path = Field(
        default=ROOT / "var",
        description="The folder of this install's local state (the SQLite file of `make "
        "migrate`, and the secret key made when none is set, in its file `secret-key`).",
    )
    secret_key: str = Field(
        default="",
        description="The key that signs sessions' CSRF tokens, first-arrival stamps, flashcard "
        "tokens and device cookies (RANKLAB_SECRET_KEY): a long random value. Required in "
        "production; unset (or the old placeholder) elsewhere, a random one is made once per "
        "install and kept in state_dir/secret-key (mode 0600), which every process reads.",
    )
    cookie_secure: bool = False
    session_days: int = 30
    grace_seconds: float = Field(
        default=3.0,
        ge=0,
        le=30,
        description="Extra seconds after a deadline during which an answer still counts.",
    )
    new_cards_per_day: int = Field(
        default=10,
        ge=0,
        le=1000,
        description="New flashcards a learner is shown per day, over every topic (one limit "
        "for /cards and each topic's deck; the learner's day, in their time zone); due cards "
        "are always shown first and are not limited.",
    )
    login_limit_per_account_address: str = Field(
        default="10/minute;50/hour",
        description="Log-in attempts allowed at one username from one client address (the "
        "`limits` notation, several separated by ';'): a stranger elsewhere cannot use up "
        "the owner's.",
    )
    login_limit_per_account: str = Field(
        default="200/hour",
        description="Failed log-ins allowed at one username from all browsers without its "
        "device cookie together: guessing one password from many addresses stays slow. Above "
        "the per-address hourly limit, so that one address alone cannot fill it; filled from "
        "many, it holds back strangers, not the owner's browsers (login_limit_per_device).",
    )
    login_limit_per_device: str = Field(
        default="5/minute;20/hour",
        description="Failed log-ins allowed from one browser carrying the account's device "
        "cookie (given to a browser when it signs in to the account): such a log-in is exempt "
        "from login_limit_per_account, and a device past this limit loses its exemption "
        "until its failures leave the window.",
    )
    device_cookie_days: int = Field(
        default=365,
        ge=1,
        le=3650,
        description="How long a browser keeps the device cookie naming the last account it "
        "signed in to (renewed at every sign-in).",
    )
    login_limit_per_address: str = Field(
        default="300/minute",
        description="Log-in attempts, right or wrong, allowed per client IP address: a bound "
        "on the password-hashing work one address can cause, far above a lecture hall behind "
        "one NAT address logging in together.",
    )
    login_failures_per_address: str = Field(
        default="30/minute;300/hour",
        description="Failed log-ins (wrong password or unknown name) allowed per client IP "
        "address, whatever the account: guessing across many accounts from one address stays "
        "as slow as before, while the people behind one NAT address who type their password "
        "right are not counted.",
    )
    guest_limit_per_address: str = Field(
        default="240/minute;1000/hour",
        description="New guests allowed per client IP address (a lecture hall behind one NAT "
        "address starts together).",
    )
    trusted_proxies: str = Field(
        default="",
        description="Addresses or networks of reverse proxies whose X-Forwarded-For names the "
        "visitor (comma-separated, as uvicorn's forwarded_allow_ips; '*' trusts every peer). "
        "Empty: the peer's own address, whatever the headers say.",
    )
    register_limit_per_address: str = Field(
        default="600/hour;2000/day",
        description="Sign-up attempts allowed per client IP address: a class of 200 behind one "
        "NAT address signs up in the same few minutes (measured: `make bench-signup`), "
        "while one address still cannot mint accounts without end.",
    )
    lab_runs_per_learner: str = Field(
        default="10/minute",
        description="Lab runs a learner may start (the `limits` notation); one at a time too.",
    )
    runs_per_learner: str = Field(
        default="20/minute",
        description="Runs a learner may start across Run it, lesson examples and labs (the "
        "`limits` notation); one at a time too, and labs also count lab_runs_per_learner.",
    )
    runs_at_once: int = Field(
        default_factory=lambda: max(1, os.cpu_count() or 1),
        ge=1,
        description="Runs this app process sends to the executor at once (as many as the "
        "embedded executor's slots); more wait, and a free slot goes to the waiting party with "
        "the fewest runs going: a signed-in learner is a party of one, the guests of one client "
        "address (an IPv6 /64) are one party and take turns within it.",
    )
    runs_waiting_per_party: int = Field(
        default=40,
        ge=1,
        description="Runs one party (a signed-in learner, or the guests of one client address) "
        "may have waiting for a slot in this app process; past it, 429 with Retry-After. Room "
        "for a class of guests behind one NAT address pressing Run together.",
    )
    runs_waiting: int = Field(
        default=200,
        ge=1,
        description="Runs all parties together may have waiting for a slot in this app "
        "process; past it, 503 with Retry-After. Each waiting run holds an open request.",
    )
    lab_code_max_chars: int = Field(
        default=20_000, ge=100, le=200_000, description="The longest code a lab run accepts."
    )
    form_max_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="The largest request body a route accepts (413 beyond; app.bodies): forms "
        "carry at most 4,000 characters of text (36 KiB percent-encoded). The lab routes "
        "(/labs/) accept 9 bytes per character of lab_code_max_chars more.",
    )
    body_idle_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="A request body that sends nothing for this long is refused with 408.",
    )
    body_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="A request body not complete this long after its headers is refused with 408.",
    )
    rate_limit_storage: str = Field(
        default="memory://",
        description="Where attempt counts live: memory:// is per process; several processes or "
        "hosts need a shared store such as redis://host:6379.",
    )
    executor_url: str | None = Field(
        default=None,
        description="An executor service to use (RANKLAB_EXECUTOR_URL). Unset, `ranklab serve` "
        "starts its own next to the app, on a free loopback port with a token made per start.",
    )
    executor_timeout_s: float = 60.0
    queue_url: str | None = Field(
        default=None,
        description="A Redis URL (RANKLAB_QUEUE_URL, redis://host:6379/0): runs go on its "
        "streams and `ranklab agent` processes run them; `ranklab serve` then starts no "
        "executor of its own. Unset, the app talks to one executor over HTTP.",
    )
    queue_limit: int = Field(
        default=100,
        ge=1,
        description="Runs that may wait in a pool's queue before a new one is refused as busy.",
    )
    sse_readers_per_run: int = Field(
        default=100,
        ge=1,
        description="SSE readers one app process serves of one bus or lab run (browser tabs "
        "following it); one more gets 429. On the job bus they share one Redis read of the run "
        "(app.fanout).",
    )
    sse_readers: int = Field(
        default=2000,
        ge=1,
        description="SSE readers one app process serves, all runs together (bus runs and lab "
        "runs each); one more gets 503.",
    )
    executor_token: str | None = Field(
        default=None,
        description="The executor's shared secret (RANKLAB_EXECUTOR_TOKEN, the same variable "
        "the executor reads); required by an executor that listens beyond loopback.",
    )
    access_log: bool = Field(
        default=False,
        description="Log a line per request (uvicorn's access log) in `ranklab serve`. Off by "
        "default: formatting and writing it cost about a tenth of a page's time under load.",
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="How `ranklab serve` writes its log: text (uvicorn's lines) or json (one "
        "JSON object per line with the request id; the access log, when on, then comes from "
        "the app with method, path, status and duration_ms).",
    )
    metrics_token: str | None = Field(
        default=None,
        description="A bearer token for /metrics (RANKLAB_METRICS_TOKEN). Set, /metrics answers "
        "only requests carrying it; unset, only loopback clients, and none in production.",
    )
    reload_templates: bool = Field(
        default=False,
        description="Re-read a template when its file changes (development only: every page "
        "then checks the modification time of each template it uses).",
    )

    @field_validator("database_url")
    @classmethod
    def _normalise_postgres(cls, url: str) -> str:
        for prefix in ("postgres://", "postgresql://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url.removeprefix(prefix)
        return url

    @field_validator(
        "login_limit_per_account",
        "login_limit_per_account_address",
        "login_limit_per_device",
        "login_limit_per_address",
        "login_failures_per_address",
        "register_limit_per_address",
        "guest_limit_per_address",
        "lab_runs_per_learner",
        "runs_per_learner",
    )
    @classmethod
    def _rate_limit(cls, value: str) -> str:
        try:
            limits.parse_many(value)
        except ValueError as error:
            raise ValueError(f"{value!r} is not a rate limit such as 10/minute") from error
        return value

    # Where the secret key came from when none was set (app.main says so in the log).
    _secret_key_file: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _a_secret_of_its_own(self) -> Settings:
        if self.secret_key not in ("", PLACEHOLDER_SECRET):
            return self
        if self.environment == "production":
            raise ValueError("set RANKLAB_SECRET_KEY to a long random value in production")
        self.secret_key, self._secret_key_file = secret_file.read_or_make(self.state_dir)
        return self

    @property
    def secret_key_file(self) -> Path | None:
        """The file holding the secret key made for this install, if none was set."""
        return self._secret_key_file

    @model_validator(mode="after")
    def _reload_templates_in_development_only(self) -> Settings:
        if self.reload_templates and self.environment != "development":
            raise ValueError("RANKLAB_RELOAD_TEMPLATES is for development only")
        return self

    @property
    def is_sqlite(self) -> bool:
        """Whether the database is an SQLite file."""
        return self.database_url.startswith("sqlite")
