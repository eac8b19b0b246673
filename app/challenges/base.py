"""What every item kind is built from: shared fields, options, launch settings, outcomes.

The concrete kinds live in app/kinds (one folder each) and subclass these; app.challenges.schema
puts them together into a challenge set. Pure: the standard library and pydantic only.
"""

from __future__ import annotations

import difflib
import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    field_validator,
    model_validator,
)

from app.challenges import icons

SLUG = r"^[a-z0-9][a-z0-9-]*$"
DEFAULT_TIME_LIMIT_S = 120
DEFAULT_ATTEMPTS = 2


class Strict(BaseModel):
    """Base for every schema model: unknown fields are errors and models are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Category(StrEnum):
    """What kind of skill an item exercises (as on the seed pages)."""

    CONCEPTUAL = "Conceptual"
    PREDICT_OUTPUT = "Predict Output"
    HYPERPARAMETER = "Hyperparameter"
    DEBUG = "Debug"
    MODEL_CHOICE = "Model Choice"
    METRICS = "Metrics"


class Difficulty(StrEnum):
    """How hard an item is meant to be, easiest first."""

    BEGINNER = "beginner"
    INTERMEDIATE = "intermediate"
    ADVANCED = "advanced"
    EXPERT = "expert"


class Backend(StrEnum):
    """torch.distributed backend for a snippet; auto picks NCCL when enough GPUs exist."""

    AUTO = "auto"
    GLOO = "gloo"
    NCCL = "nccl"


def parse_time_limit(value: object) -> object:
    """Accept seconds as an integer or a "m:ss" string, as the seed pages print them."""
    if isinstance(value, str):
        match = re.fullmatch(r"(\d+):([0-5]\d)", value.strip())
        if not match:
            raise ValueError('time limit must be seconds (an integer) or "m:ss", e.g. "2:00"')
        return int(match[1]) * 60 + int(match[2])
    return value


class Badge(Strict):
    """The badge a learner earns by a set (the rule: app/attempts/rules.py, badge_earned)."""

    name: str = Field(min_length=1, description="Badge title shown on results and progress.")
    icon: str = Field(
        default=icons.DEFAULT,
        max_length=40,
        description="The badge's icon: one of Lucide's icons RankLab ships (award, music, ruler, "
        "lock, compass, rocket, save, …; docs/authoring.md lists them), or an emoji that stands "
        "for one.",
    )
    description: str | None = Field(
        default=None,
        description="An optional line about the badge shown beside its name. How it is earned "
        "is not written here: the set page states the real rule, worked out from the set.",
    )

    @field_validator("icon")
    @classmethod
    def _known_icon(cls, value: str) -> str:
        resolved = icons.resolve(value)
        if resolved is None:
            near = difflib.get_close_matches(value, sorted(icons.NAMES), n=1)
            hint = f'did you mean "{near[0]}"? ' if near else ""
            raise ValueError(
                f"unknown icon {value!r}: {hint}use one of {', '.join(sorted(icons.NAMES))}"
            )
        return resolved


class Launcher(StrEnum):
    """How a snippet is started: by torchrun (one process per rank) or as a plain script."""

    TORCHRUN = "torchrun"
    PYTHON = "python"


class Launch(Strict):
    """How the executor launches a snippet: as torchrun --nproc_per_node=nproc would."""

    launcher: Launcher = Field(
        default=Launcher.TORCHRUN,
        description="torchrun: nproc ranks with torchrun's variables. python: one process run as "
        "`python snippet.py` (no torchrun variables) whose own children, e.g. from mp.spawn, are "
        "the ranks; its output is reported as rank 0's. `launch: python` is short for this.",
    )
    nproc: int = Field(
        default=1,
        ge=1,
        le=8,
        description="Number of ranks to start (with launcher python: the children it starts).",
    )
    backend: Backend = Field(default=Backend.AUTO, description="Process-group backend.")
    gpus: int = Field(
        default=0,
        ge=0,
        le=8,
        description="CUDA devices the snippet needs; a CPU executor reports 'needs N GPUs'.",
    )
    timeout_s: float = Field(
        default=20, gt=0, le=60, description="Wall-clock limit (the executor's maximum is 60 s)."
    )


class RankOutcome(StrEnum):
    """How a rank ends."""

    RETURNS = "returns"  # the script ran to its end (exit code 0)
    RAISES = "raises"  # an uncaught exception ended it
    HANGS = "hangs"  # still blocked when the run was stopped, even with a much longer limit
    KILLED = "killed"  # a signal or the memory limit ended it


class RankExpectation(Strict):
    """What one rank (or every rank) is expected to do when the snippet runs.

    With no `status`, a claim about an exception implies `raises`, and a claim about stdout
    implies `returns` (unless the outcome says the run hangs): "prints X" means it finished.
    """

    status: RankOutcome | None = Field(
        default=None, description="How the rank ends: returns, raises, hangs or killed."
    )
    stdout: str | None = Field(
        default=None, description="Exact stdout (trailing whitespace of each line ignored)."
    )
    stdout_regex: str | None = Field(
        default=None, description="A regular expression the whole stdout must match."
    )
    stderr_regex: str | None = Field(
        default=None,
        description="A regular expression searched in stderr (a warning, a traceback line).",
    )
    exception: str | None = Field(
        default=None,
        description="Class of the uncaught exception, e.g. RuntimeError; a subclass matches "
        "too (DistBackendError is a RuntimeError). A module-qualified name also works.",
    )
    message_regex: str | None = Field(
        default=None, description="A regular expression searched in the exception message."
    )
    exit_code: int | None = Field(
        default=None, description="The rank's exit code (-N when killed by signal N)."
    )
    differs_across_ranks: bool | None = Field(
        default=None,
        description="true: this rank's stdout differs from every other rank's (on every run); "
        "false: it is the same as every other rank's.",
    )
    varies_between_runs: bool | None = Field(
        default=None,
        description="true: the rank's stdout changes from run to run (unseeded randomness); "
        "false: it is the same on every run. An exact `stdout` implies false.",
    )

    @model_validator(mode="after")
    def _states_something(self) -> RankExpectation:
        # Like an outcome, a claim about a rank that states nothing would hold for any rank.
        if all(getattr(self, name) is None for name in type(self).model_fields):
            raise ValueError(
                "the claim about this rank states nothing: give status, stdout, exception, …"
            )
        return self

    def implied_status(self, run_hangs: bool) -> RankOutcome | None:
        """The status the claims imply when `status` is not given."""
        if self.status is not None:
            return self.status
        if self.exception is not None or self.message_regex is not None:
            return RankOutcome.RAISES
        if not run_hangs and (self.stdout is not None or self.stdout_regex is not None):
            return RankOutcome.RETURNS
        return None


OTHERS = "others"  # in an item with params: every rank its outcome does not name
RANK_TEMPLATE = re.compile(r"^\{([^{}]+)\}$")  # "{SRC}", "{nproc - 1}": a rank per variant


def is_rank_key(key: str) -> bool:
    """Whether a rank key is "all", a rank number, "others" or a "{expression}"."""
    return key in ("all", OTHERS) or key.isdigit() or RANK_TEMPLATE.match(key) is not None


def is_variant_rank_key(key: str) -> bool:
    """Whether a rank key is only known per variant ("others" or a "{expression}")."""
    return key == OTHERS or RANK_TEMPLATE.match(key) is not None


class Outcome(Strict):
    """An observable result of running a snippet, used by `ranklab verify` to prove a key."""

    ranks: dict[str, RankExpectation] = Field(
        default_factory=dict,
        description='Expectations keyed by rank number as a string ("0", "1") or "all". '
        'In an item with params, also "{expression}" (e.g. "{SRC}", "{nproc - 1}"), rendered '
        'to a rank number per variant, and "others": every rank the outcome does not name.',
    )
    hangs: bool | None = Field(
        default=None,
        description="true: the run hangs (deadlock or missing rank): some rank is still "
        "blocked with a much longer time limit (say which with a rank `status: hangs`); "
        "false: the run ends, no rank blocked. Omitted: no claim about the run as a whole.",
    )
    order_varies: bool | None = Field(
        default=None,
        description="true: which rank prints first may differ between runs (allowed, never "
        "shown false); false: it is the same on every run. Omitted: no claim about order.",
    )

    @field_validator("ranks")
    @classmethod
    def rank_keys_are_numbers_or_all(
        cls, ranks: dict[str, RankExpectation]
    ) -> dict[str, RankExpectation]:
        """Refuse rank keys other than "all", a non-negative integer, or (for an item with
        params, checked where the item is) "others" or a "{expression}"."""
        for key in ranks:
            if not is_rank_key(key):
                raise ValueError(
                    f'rank key {key!r} must be "all", a rank number, or (with params) '
                    '"others" or "{expression}"'
                )
        return ranks

    @model_validator(mode="after")
    def _states_something(self) -> Outcome:
        # A claim is judged on exactly what it states: one that states nothing would be
        # "true" of every run, so it could neither prove a key nor be shown false.
        if not self.ranks and self.hangs is None and self.order_varies is not False:
            raise ValueError(
                "the outcome states nothing a run could show false: name ranks (or all), "
                "or say hangs: true/false"
            )
        return self


class Option(Strict):
    """One answer option of a multiple-choice item."""

    id: str = Field(pattern=r"^[A-Z]$", description="Option letter, A to Z.")
    text: str = Field(min_length=1, description="The option as shown (Markdown).")
    feedback: str | None = Field(
        default=None, description="Shown after the learner picks this option (Markdown)."
    )
    outcome: Outcome | None = Field(
        default=None,
        description="For executable items: what running the snippet shows if this option is true.",
    )
    # Left out of dumps (exclude), as `pin` is: the belief a distractor stands for changes no
    # run, so tagging one keeps its item's content hash and verify's record of it as they
    # were. A set's version keeps its tags beside the dump (app.publishing.versions).
    misconception: str | None = Field(
        default=None,
        pattern=SLUG,
        max_length=100,
        exclude=True,
        description="For a distractor: the id of the wrong belief it stands for, from the "
        "course's misconceptions.yaml; results and dashboards name it, not the option.",
    )
    as_if: dict[str, str] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="On an item with params: this distractor is the key's text and outcome "
        "as they would be if a misconception held, each name given an expression of the "
        'parameters, e.g. {nproc: "nproc - 1"} or {total: "total / nproc"}; text and outcome '
        "may then be left out (app.challenges.variants).",
    )
    as_if_outcome: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        exclude_if=lambda value: value is None,
        description="On an item with params: this distractor's outcome is the key's as a named "
        "misconception changes it, in every variant: only-rank-N (N may be {SRC}), "
        "every-rank-like-N, rank-order or unchanged-input (app.challenges.outcome_transforms); "
        "give the text, leave the outcome out.",
    )
    # Left out of dumps (exclude): where an option is shown changes no proof, so pinning one
    # keeps its item's content hash, and verify's record of it, as they were.
    pin: Literal["first", "last"] | None = Field(
        default=None,
        exclude=True,
        description="Keep this option in place while the others are shuffled for each learner: "
        '"last" for "none of the above" and the like, "first" rarely.',
    )


class ItemBase(Strict):
    """Fields every item has, whatever its kind."""

    id: str = Field(pattern=SLUG, description="Stable id within the set; attempts refer to it.")
    fact: str | None = Field(
        default=None,
        pattern=SLUG,
        max_length=100,
        description="A slug naming the one fact this asks about; global across topics, so no "
        "quiz, review or flashcard day asks the same fact twice.",
    )
    proof: ProofRef | None = Field(
        default=None,
        description="A run that proves what this states beyond its key: the id of a named "
        "proof of the topic, or an inline proof (code or code_file, launch, outcome).",
    )
    source: Source | None = Field(
        default=None,
        description="A citation: a docs url or a torch source path, with the torch version read.",
    )
    category: Category = Field(description="What the item exercises.")
    difficulty: Difficulty = Field(description="beginner, intermediate, advanced or expert.")
    title: str = Field(min_length=1, description="A short heading for the question.")
    prompt: str = Field(min_length=1, description="The question (Markdown).")
    hint: str | None = Field(default=None, description="Shown on demand (Markdown).")
    explanation: str = Field(
        min_length=1, description="Shown once the item is answered or closed (Markdown)."
    )
    time_limit: Annotated[int, Field(ge=10, le=3600)] = Field(
        default=DEFAULT_TIME_LIMIT_S,
        description='Seconds to answer, as an integer or "m:ss"; default 2:00.',
    )
    attempts: int = Field(
        default=DEFAULT_ATTEMPTS, ge=1, le=10, description="Tries allowed; default 2."
    )

    @field_validator("time_limit", mode="before")
    @classmethod
    def _time_limit(cls, value: object) -> object:
        return parse_time_limit(value)


class ChoiceBase(ItemBase):
    """An item answered by picking options."""

    options: list[Option] = Field(min_length=2, max_length=8, description="The options, A first.")
    answer: str | list[str] = Field(
        description="The correct option letter, or a list of letters when several are correct."
    )

    @property
    def answer_ids(self) -> frozenset[str]:
        """The set of correct option letters."""
        return frozenset([self.answer] if isinstance(self.answer, str) else self.answer)

    @property
    def multiple(self) -> bool:
        """Whether the learner must pick several options."""
        return isinstance(self.answer, list)

    @model_validator(mode="before")
    @classmethod
    def _as_if_copies_the_key(cls, data: Any) -> Any:
        # A distractor written `as_if:` alone is the key's text and outcome under other
        # values: copy them here, so the item as written is complete; render() fills each
        # variant's in with the values the misconception would give.
        if not isinstance(data, dict) or not isinstance(data.get("options"), list):
            return data
        key = data.get("answer")
        template = next(
            (o for o in data["options"] if isinstance(o, dict) and o.get("id") == key), None
        )
        if template is None:
            return data
        options = []
        for option in data["options"]:
            if isinstance(option, dict) and option.get("as_if_outcome") and "outcome" in option:
                raise ValueError(
                    f"option {option.get('id')}: as_if_outcome derives the outcome from the "
                    "key's: leave outcome out"
                )
            if isinstance(option, dict) and option.get("as_if"):
                copied = {name: template[name] for name in ("text", "outcome")
                          if name in template and name not in option}  # fmt: skip
                option = {**option, **copied}
            options.append(option)
        return {**data, "options": options}

    @model_validator(mode="after")
    def _options_are_consistent(self) -> ChoiceBase:
        ids = [option.id for option in self.options]
        if len(set(ids)) != len(ids):
            raise ValueError(f"option ids must be unique, got {ids}")
        unknown = sorted(self.answer_ids - set(ids))
        if unknown:
            raise ValueError(f"answer names unknown option(s) {unknown}; options are {ids}")
        if sum(option.pin is None for option in self.options) < 2:
            raise ValueError(
                "pin at most all but two options: the rest are shuffled for each learner"
            )
        tagged = sorted(o.id for o in self.options if o.id in self.answer_ids and o.misconception)
        if tagged:
            raise ValueError(
                f"a key stands for no misconception: drop `misconception:` from {tagged}"
            )
        if len(self.answer_ids) == len(ids):
            raise ValueError("every option is a key: ticking them all would win; add a distractor")
        if isinstance(self.answer, list) and len(self.answer) < 2:
            raise ValueError("a list answer needs at least two letters; use a single letter")
        return self


class ExecutableMixin(Strict):
    """Fields of items whose code runs on the executor."""

    code: str | None = Field(default=None, description="The snippet, inline.")
    code_file: str | None = Field(
        default=None,
        pattern=r"^[\w./-]+\.py$",
        description="A .py file beside the YAML holding the snippet (instead of code).",
    )
    launch: Launch = Field(default_factory=Launch, description="How the snippet is launched.")

    @field_validator("launch", mode="before")
    @classmethod
    def _launcher_shorthand(cls, value: object) -> object:
        # `launch: python` reads better than `launch: {launcher: python}` for a plain script.
        if isinstance(value, str) and value in {member.value for member in Launcher}:
            return {"launcher": value}
        return value

    @model_validator(mode="after")
    def _one_source(self) -> ExecutableMixin:
        if (self.code is None) == (self.code_file is None):
            raise ValueError("give exactly one of code or code_file")
        return self


ParamValue = Annotated[
    bool | int | float | str | list[bool | int | float | str],
    Field(description="One value of a parameter: a number, a string, true/false or a list."),
]
PARAM_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class Parameterised(Strict):
    """Parameters an item may declare, each with a finite domain: every combination is a
    variant, run and proven on its own by `ranklab verify` (app.challenges.variants)."""

    params: dict[Annotated[str, Field(pattern=PARAM_NAME)], list[ParamValue]] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Name -> the values it takes, e.g. {nproc: [2, 3, 4], OP: [SUM, MAX]}. "
        "`nproc` sets launch.nproc; every other name is a top-level assignment in the snippet "
        '(`OP = "SUM"`), rewritten per variant. Texts say {OP}.',
    )
    derive: dict[Annotated[str, Field(pattern=PARAM_NAME)], str] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Name -> an expression of the parameters (arithmetic, comparisons, "
        "`a if c else b`, sum, range, min, max, len, abs, round, sorted, join) that texts "
        'may name, e.g. {total: "sum(range(1, nproc + 1))"}.',
    )
    # The snippet of a code_file item, as the loader read it (not a field: never dumped or
    # hashed twice); app.challenges.variants rewrites it per variant.
    _source: str | None = PrivateAttr(default=None)

    @field_validator("params")
    @classmethod
    def _finite_domains(cls, params: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        for name, values in (params or {}).items():
            if not values:
                raise ValueError(f"parameter {name} has no values")
            seen = [repr(value) for value in values]
            if len(set(seen)) != len(seen):
                raise ValueError(f"parameter {name} lists a value twice: {values}")
            if name == "nproc" and not all(
                isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 8
                for value in values
            ):
                raise ValueError("nproc takes rank counts from 1 to 8")
        return params

    @model_validator(mode="after")
    def _names_distinct(self) -> Parameterised:
        clash = sorted(set(self.params or {}) & set(self.derive or {}))
        if clash:
            raise ValueError(f"derive redefines parameter(s) {clash}")
        if self.derive and not self.params:
            raise ValueError("derive needs params to derive from")
        return self


class Source(Strict):
    """A citation for a claim no run shows: a docs page or a file of the torch source tree,
    with the torch version it was read at."""

    url: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="A docs page, e.g. https://docs.pytorch.org/docs/2.13/distributed.html",
    )
    path: str | None = Field(
        default=None,
        pattern=r"^[\w.-]+(/[\w.-]+)*$",
        description="A path in the torch source tree, e.g. torch/distributed/distributed_c10d.py",
    )
    torch: str = Field(
        pattern=r"^\d+\.\d+(\.\d+)?\S*$",
        description='The torch version the source was read at, e.g. "2.13.0" (required).',
    )

    @model_validator(mode="before")
    @classmethod
    def _torch_required(cls, data: Any) -> Any:
        # A citation without the version read cannot be re-checked when torch changes.
        if isinstance(data, dict) and "torch" not in data:
            raise ValueError('a source needs the torch version it was read at: torch: "2.13.0"')
        return data

    @model_validator(mode="after")
    def _one_place(self) -> Source:
        if (self.url is None) == (self.path is None):
            raise ValueError("a source gives exactly one of url or path")
        return self


class InlineProof(ExecutableMixin):
    """A snippet and the outcome it must show: `ranklab verify` runs it as it runs a key."""

    outcome: Outcome = Field(
        description="What every run must show, in the form of a predict_output option's outcome."
    )

    @model_validator(mode="after")
    def _checkable(self) -> InlineProof:
        if not self.outcome.ranks and not self.outcome.hangs:
            raise ValueError("a proof's outcome must claim something a run can show")
        return self


class NamedProof(InlineProof):
    """A proof in a topic's `proofs:`, named by its cards, items and cheat-sheet lines."""

    id: str = Field(pattern=SLUG, max_length=100, description="Unique within the topic.")


def _proof_form(value: Any) -> str:
    return "inline" if isinstance(value, dict | InlineProof) else "id"


# A card's or item's `proof:`: the id of a named proof of its topic, or a proof inline. The
# discriminator keeps a broken inline proof's errors to the inline form.
ProofRef = Annotated[
    Annotated[str, Tag("id"), Field(pattern=SLUG)] | Annotated[InlineProof, Tag("inline")],
    Discriminator(_proof_form),
]

# ItemBase names Source and ProofRef, defined after it so that they sit beside the snippet
# fields they reuse: complete the models that were built before them.
ItemBase.model_rebuild()
ChoiceBase.model_rebuild()
