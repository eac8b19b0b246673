"""Generate the JSON Schema that editors use to complete and check challenge YAML."""

from __future__ import annotations

import json
from pathlib import Path

from app.challenges.schema import ChallengeSet

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "challenges" / "challenge-set.schema.json"


def render() -> str:
    """Return the JSON Schema text, stable byte for byte for the same schema."""
    schema = ChallengeSet.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://ranklab.dev/schemas/challenge-set.schema.json"
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write(path: Path = SCHEMA_PATH) -> Path:
    """Write the schema file committed in the repo."""
    path.write_text(render(), encoding="utf-8")
    return path
