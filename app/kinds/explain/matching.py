"""Score a free-text explanation against an item's key concepts (pure: no web, no database).

A concept is covered when one sentence of the answer holds every content word of one of the
concept's author-given phrasings, lemmatised (simplemma), in any order, close together, and
with the same polarity: "gradients are not averaged" does not cover "gradients are averaged",
while a phrasing that is itself negative ("does not need a GPU") needs the negation.

Deliberately simple and explainable: the learner is shown the sentence that matched each
concept and the phrasing it matched, so a wrong score can be understood and reported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import simplemma

# Words that carry no meaning for a concept; dropped from phrasings and answers alike.
STOPWORDS = frozenset({
    "a", "an", "the", "be", "do", "have", "it", "its", "it's", "that", "this", "these", "those",
    "there", "which", "who", "so", "just", "also", "then", "and", "can", "will", "would",
    "should", "may", "might", "must", "shall", "could", "really", "very", "own", "their", "they",
    "them", "we", "you", "i", "of", "on", "in", "to", "for", "with", "from", "by", "at", "per",
    "into", "onto",
})  # fmt: skip
# Words an answer may use for one another; phrasings need not spell out both. In distributed
# PyTorch a rank is a process; "sync" is short for synchronise, spelt either way.
SAME = {"each": "every", "all": "every", "process": "rank", "synchronize": "sync",
        "synchronise": "sync"}  # fmt: skip
NEGATIONS = frozenset({
    "not", "no", "never", "without", "neither", "nor", "none", "nothing", "nobody", "cannot",
})  # fmt: skip
# A negation reaches the next few words, up to one of these (or a punctuation mark).
SCOPE_ENDS = frozenset({
    "but", "however", "whereas", "while", "although", "though", "instead", "rather", "yet", "so",
    "because", "since", "if", "when", "then",
})  # fmt: skip
NEGATION_REACH = 3
# How many extra words a phrasing's words may be spread over, beyond their own count.
SLACK = 3

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-_'][A-Za-z0-9]+)*|[.,;:!?()]")


@dataclass(frozen=True)
class Concept:
    """One idea an answer should contain, with the ways an author accepts it being said."""

    name: str
    phrasings: tuple[str, ...]


@dataclass(frozen=True)
class ConceptMatch:
    """Whether the answer covers one concept, and where."""

    concept: str
    covered: bool
    sentence: str | None = None  # the answer's sentence that covered it
    phrasing: str | None = None  # the phrasing that sentence matched
    contradicted_by: str | None = None  # a sentence that said the opposite, if none covered it


@dataclass(frozen=True)
class _Word:
    lemma: str
    negated: bool
    # A compound also answers to its last part: mini-batch is a batch, all-reduce a reduce.
    also: str | None = None

    def means(self, lemma: str) -> bool:
        """Whether this word stands for the given lemma."""
        return lemma in (self.lemma, self.also)


def score(answer: str, concepts: Sequence[Concept]) -> list[ConceptMatch]:
    """Match every concept against the answer's sentences; one ConceptMatch per concept."""
    sentences = [s.strip() for s in simplemma.split_sentences(answer) if s.strip()]
    analysed = [(part, _analyse(part)) for sentence in sentences for part in _parts(sentence)]
    return [_match_concept(concept, analysed) for concept in concepts]


def _match_concept(concept: Concept, sentences: list[tuple[str, list[_Word]]]) -> ConceptMatch:
    contradicted_by = None
    for phrasing in concept.phrasings:
        lemmas, negative = _phrase(phrasing)
        if not lemmas:
            continue
        for sentence, words in sentences:
            polarities = _find(lemmas, words)
            if negative in polarities:
                return ConceptMatch(concept.name, True, sentence, phrasing)
            if polarities:
                contradicted_by = contradicted_by or sentence
    return ConceptMatch(concept.name, False, contradicted_by=contradicted_by)


def _parts(sentence: str) -> list[str]:
    """A sentence, or the items of a bare keyword list ("gradients, ranks, average, ..."), each
    on its own: listing words is not stating how they relate."""
    items = [item.strip() for item in sentence.split(",")]
    if len(items) >= 4 and sum(len(item.split()) for item in items) <= 3 * len(items):
        return [item for item in items if item]
    return [sentence]


def _find(lemmas: tuple[str, ...], words: list[_Word]) -> set[bool]:
    """Find the phrasing's lemmas close together; return the polarities found (True: negated)."""
    need = set(lemmas)
    width = len(need) + SLACK
    found: set[bool] = set()
    for start, word in enumerate(words):
        if any(word.means(lemma) for lemma in need):
            negated = _cover(need, words[start : start + width])
            if negated is not None:
                found.add(negated)
    return found


def _cover(need: set[str], window: list[_Word]) -> bool | None:
    """Whether the window holds every needed lemma: None if not; else whether any is negated."""
    negated = False
    for lemma in need:
        word = next((word for word in window if word.means(lemma)), None)
        if word is None:
            return None
        negated = negated or word.negated
    return negated


@lru_cache(maxsize=4096)
def _phrase(phrasing: str) -> tuple[tuple[str, ...], bool]:
    # A phrasing's own compounds must match whole (an answer's "reduce" is no "all-reduce").
    words = [_Word(word.lemma, word.negated) for word in _analyse(phrasing)]
    negative = any(word.lemma in NEGATIONS for word in _lemmas(phrasing))
    return tuple(word.lemma for word in words), negative


def _analyse(text: str) -> list[_Word]:
    """Content lemmas of a text, each marked negated when a negation reaches it."""
    result: list[_Word] = []
    reach = 0
    for word in _lemmas(text):
        lemma = word.lemma
        if lemma in NEGATIONS:
            reach = NEGATION_REACH
            continue
        if lemma in SCOPE_ENDS or not lemma[0].isalnum():
            reach = 0
            continue
        if lemma in STOPWORDS:
            continue
        result.append(_Word(lemma, reach > 0, word.also))
        reach = max(reach - 1, 0)
    return result


def _lemmas(text: str) -> list[_Word]:
    """Every token of a text as a lemma: lower case, "n't" as "not", all-reduce as allreduce."""
    text = re.sub(r"n't\b", " not", text.replace("’", "'"), flags=re.IGNORECASE)
    text = re.sub(r"\bcannot\b", "can not", text, flags=re.IGNORECASE)
    words = []
    for token in _TOKEN.findall(text):
        parts = re.split(r"[-_]", token)
        # ...but no_sync is not a sync: a negating first part keeps the compound whole.
        compound = len(parts) > 1 and parts[-1] and parts[0].lower() not in NEGATIONS
        also = _lemma(parts[-1]) if compound else None
        words.append(_Word(_lemma(token), False, also))
    return words


@lru_cache(maxsize=65536)
def _lemma(token: str) -> str:
    token = token.lower()
    if not token[0].isalnum():
        return token
    joined = token.replace("-", "").replace("_", "").replace("'", "")
    lemma = simplemma.lemmatize(joined, lang="en").lower()
    # Jargon the dictionary lacks (allreduces, dataloaders): take a plural or verb -s off.
    unknown = lemma == joined and not simplemma.is_known(joined, lang="en")
    if unknown and len(joined) > 4 and joined.endswith("s") and not joined.endswith("ss"):
        lemma = joined[:-1]
    return SAME.get(lemma, lemma)
