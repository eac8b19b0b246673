"""What a topic's prose rests on: each card and cheat-sheet claim is proven by a run (its
proof passed `ranklab verify` as it is now), sourced (it cites docs or torch source), or
neither. CONTENT.md counts them per topic. A line marked `<!-- nofact -->` states no torch
behaviour and is counted apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from app.challenges.loader import LoadedSet, LoadedTopic
from app.challenges.schema import InlineProof, ItemBase
from app.verification import proofs as proof_file

PROVEN, SOURCED, NEITHER, NO_FACT = "proven", "sourced", "neither", "no fact"
KINDS = (PROVEN, SOURCED, NEITHER)


def _passed(proofs: Mapping[str, proof_file.Proof], hashes: Mapping[str, str], key: str) -> bool:
    return key in hashes and proof_file.status(proofs, key, hashes[key]) == "pass"


def _named_key(topic_id: str, proof_id: str) -> str:
    return proof_file.proof_key(f"topic:{topic_id}", f"proof:{proof_id}")


def card_basis(
    topic_id: str,
    card: ItemBase,
    proofs: Mapping[str, proof_file.Proof],
    hashes: Mapping[str, str],
) -> str:
    """Whether a card is proven by a run that passed, sourced, or neither."""
    if isinstance(card.proof, str) and _passed(proofs, hashes, _named_key(topic_id, card.proof)):
        return PROVEN
    inline = proof_file.proof_key(f"topic:{topic_id}", f"card:{card.id}")
    if isinstance(card.proof, InlineProof) and _passed(proofs, hashes, inline):
        return PROVEN
    return SOURCED if card.source is not None else NEITHER


def tally(
    loaded: LoadedTopic | None,
    sets: tuple[LoadedSet, ...],
    proofs: Mapping[str, proof_file.Proof],
) -> tuple[Counter[str], Counter[str]]:
    """A topic's cards and cheat-sheet claims by what they rest on."""
    cards: Counter[str] = Counter({kind: 0 for kind in KINDS})
    claims: Counter[str] = Counter({kind: 0 for kind in KINDS})
    if loaded is None:
        return cards, claims
    topic_id = loaded.topic.id
    hashes = {run.key: run.hash for run in proof_file.proof_runs([loaded], sets)}
    for card in loaded.topic.cards:
        cards[card_basis(topic_id, card, proofs, hashes)] += 1
    for claim in loaded.claims:
        if claim.marker == "nofact":
            claims[NO_FACT] += 1
        elif claim.proof is not None and _passed(proofs, hashes, _named_key(topic_id, claim.proof)):
            claims[PROVEN] += 1
        elif claim.marker == "source" and claim.torch is not None:
            claims[SOURCED] += 1
        else:
            claims[NEITHER] += 1
    return cards, claims
