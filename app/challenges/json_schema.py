"""Generate the JSON Schemas that editors use to complete and check challenge YAML: one for
challenge sets, and beside it one for topic files (topic.yaml), one for labs (lab.yaml) and one
for the misconception catalogue (misconceptions.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from app.challenges.misconceptions import Catalogue
from app.challenges.schema import ChallengeSet, Topic
from app.labs.schema import Lab

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "challenges" / "challenge-set.schema.json"
TOPIC_SCHEMA_NAME = "topic.schema.json"
LAB_SCHEMA_NAME = "lab.schema.json"
MISCONCEPTIONS_SCHEMA_NAME = "misconceptions.schema.json"


def render(model: type[BaseModel] = ChallengeSet, name: str = SCHEMA_PATH.name) -> str:
    """Return the JSON Schema text, stable byte for byte for the same schema."""
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://ranklab.dev/schemas/{name}"
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def rendered(path: Path = SCHEMA_PATH) -> dict[Path, str]:
    """Every schema file and its text: the set schema at path, the topic and lab schemas beside
    it."""
    return {
        path: render(),
        path.with_name(TOPIC_SCHEMA_NAME): render(Topic, TOPIC_SCHEMA_NAME),
        path.with_name(LAB_SCHEMA_NAME): render(Lab, LAB_SCHEMA_NAME),
        path.with_name(MISCONCEPTIONS_SCHEMA_NAME): render(Catalogue, MISCONCEPTIONS_SCHEMA_NAME),
    }


def write(path: Path = SCHEMA_PATH) -> list[Path]:
    """Write the schema files committed in the repo."""
    written = []
    for target, text in rendered(path).items():
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written
