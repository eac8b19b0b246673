"""Score a free-text explanation against key concepts, with a verdict only where it is confident.

Each concept gets one verdict: credited (a clause of the answer states it), opposite (a clause
confidently states its negation), unsure (the answer touches it, but not in a way the scorer can
judge: shown with the model answer to compare) or missing.

A phrasing is found in a clause when the clause holds every content word of it, lemmatised
(simplemma), in any order and close together. It credits only when the clause is a statement
(it has a verb or the small words that hold a sentence together: a bare keyword list states
nothing), its polarity is the phrasing's (a negation reaches the end of its clause or a new
subject, two cancel, and a later negation in the clause denies a positive phrasing), it is not
asked as a question, and, for a phrasing of one or two content words, the clause also holds
another word of the concept (its name or another phrasing): a keyword alone is not a claim.
"Opposite" asks more: a statement, not a condition or a question, that negates a phrasing of at
least two content words, with nothing in the answer saying the concept the right way round.

Deliberately simple and explainable: the learner is shown the sentence behind each verdict and
the phrasing it matched; tests/fixtures/explain_corpus.yaml measures it (docs/design.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache

import simplemma

# Words that carry no meaning for a concept; dropped from phrasings and answers alike.
STOPWORDS = frozenset({
    "a", "an", "the", "be", "do", "have", "it", "its", "it's", "that", "this", "these", "those",
    "there", "which", "who", "so", "just", "also", "then", "and", "can", "will", "would",
    "should", "may", "might", "must", "shall", "could", "really", "very", "their", "they",
    "them", "we", "you", "i", "of", "on", "in", "to", "for", "with", "from", "by", "at", "per",
    "into", "onto", "or", "is", "are", "if", "unless", "whether", "but", "because", "think",
    "guess", "believe", "maybe", "probably", "perhaps", "say", "'d", "i'd", "i'm", "im", "nor",
})  # fmt: skip
# Words an answer may use for one another; phrasings need not spell out both. In distributed
# PyTorch a rank is a process; "sync" is short for synchronise, spelt either way.
SAME = {"each": "every", "all": "every", "process": "rank", "synchronize": "sync",
        "synchronise": "sync", "synchronized": "sync", "synchronised": "sync"}  # fmt: skip
# A negation reaches the end of its clause; an even number of them cancel out.
NEGATIONS = frozenset({
    "not", "no", "never", "neither", "none", "nothing", "nobody", "cannot",
})  # fmt: skip
# "without X" negates only the word it governs: "without set_epoch, every epoch repeats".
NARROW_NEGATIONS = frozenset({"without"})
# "not only", "not sure": a negation that denies nothing the answer goes on to say.
NOT_NEGATING_AFTER = frozenset({"only", "just", "sure", "certain", "necessarily"})
# A negation does not reach past "until": "nothing is compiled until the first call".
SCOPE_ENDS = frozenset({"until"})
# A clause ends at punctuation and before these words (which open the next clause).
CLAUSE_OPENERS = frozenset({
    "but", "however", "whereas", "while", "although", "though", "instead", "yet", "so",
    "because", "since", "if", "unless", "otherwise", "whether", "except",
})  # fmt: skip
# A clause opened by one of these states a condition, not a fact: a negation in it is no claim.
CONDITIONS = frozenset({"if", "unless", "whether", "otherwise"})
# The small words that make a clause a statement: auxiliaries, modals, subjects.
GRAMMAR = frozenset({
    "is", "are", "was", "were", "be", "been", "being", "am", "has", "have", "had", "does", "do",
    "did", "will", "would", "can", "could", "must", "should", "may", "might", "shall", "cannot",
    "i", "you", "we", "they", "it", "he", "she", "'s", "'re", "'ll", "'d", "there",
})  # fmt: skip
# Verbs of the subject, recognised when inflected (averages, averaged) or opening a clause
# (an instruction: "wrap the model", "call all_reduce").
VERBS = frozenset({
    "accumulate", "add", "all-gather", "all-reduce", "allgather", "allreduce", "apply",
    "assume", "average", "avoid", "become", "block", "broadcast", "build", "call", "cast",
    "change", "check", "clip", "collect", "combine", "come", "communicate", "compile",
    "compute", "concatenate", "contend", "contribute", "convert", "copy", "cost", "crash",
    "create", "cut", "deal", "differ", "diverge", "divide", "draw", "drift", "drop", "end",
    "exchange", "exit", "expect", "fail", "fall", "fill", "find", "finish", "fire", "free",
    "gather", "get", "give", "go", "halve", "handle", "hang", "hold", "initialise",
    "initialize", "join", "keep", "launch", "learn", "leave", "load", "lower", "make", "mark",
    "match", "meet", "move", "need", "normalise", "normalize", "overlap", "overwrite", "pad",
    "partition", "pass", "pick", "put", "raise", "reach", "read", "receive", "record", "reduce",
    "reduce-scatter", "register", "remain", "repeat", "replicate", "reseed", "reshard",
    "return", "reuse", "run", "save", "scale", "scatter", "see", "seed", "send", "set",
    "shadow", "shard", "share", "shrink", "shuffle", "skip", "slow", "spawn", "split", "start",
    "stay", "step", "store", "sum", "sync", "take", "touch", "trace", "train", "traverse",
    "trim", "unscale", "update", "use", "vary", "wait", "walk", "work", "wrap", "write",
})  # fmt: skip
# Words that may stand between a subject and its verb: "the replicas then run".
ADVERBS = frozenset({"then", "also", "still", "only", "all", "both", "never", "always", "just",
                     "now", "each", "again", "simply"})  # fmt: skip
# Subjects: a negation does not reach past one, and "and" before one may open a new clause.
SUBJECTS = frozenset({"it", "they", "we", "you", "i", "he", "she"})
SUBJECT_STARTS = SUBJECTS | {"the", "a", "an", "its", "their", "each", "every", "all", "so"}
# How many extra words a phrasing's words may be spread over, beyond their own count.
SLACK = 3
# Words too common in this course to tie a keyword to its concept.
GENERIC = frozenset({"every", "rank", "gpu", "model", "ddp", "one", "only", "same", "other"})
# A phrasing with fewer content words than this credits only beside another word of its concept.
SHORT = 3
# A clause with fewer words than this states nothing on its own ("all-reduce", "world size").
MIN_CLAUSE_WORDS = 3

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-_'.+][A-Za-z0-9]+)*|[,;:!?]")
_PUNCT = frozenset(",;:!?")
# Commas inside brackets separate arguments, not clauses: all_reduce(t, group=pair).
_BRACKETED = re.compile(r"\(([^()]*)\)|\[([^\[\]]*)\]")
# Words that, after a word ending in -s, show it is a verb: "normalises with", "skips the".
OBJECT_STARTS = frozenset({
    "the", "a", "an", "its", "their", "every", "each", "all", "it", "them", "with", "to", "on",
    "in", "from", "over", "across", "into", "at", "by", "as", "up", "down", "back", "out",
    "once", "only", "one", "two", "no", "nothing", "until", "before", "after", "between",
})  # fmt: skip


class Verdict(StrEnum):
    """What the scorer concludes about one concept."""

    CREDITED = "credited"
    OPPOSITE = "opposite"
    UNSURE = "unsure"
    MISSING = "missing"


@dataclass(frozen=True)
class Concept:
    """One idea an answer should contain, with the ways an author accepts it being said."""

    name: str
    phrasings: tuple[str, ...]


@dataclass(frozen=True)
class ConceptMatch:
    """The verdict on one concept, and the sentence and phrasing behind it."""

    concept: str
    verdict: Verdict
    sentence: str | None = None  # the answer's sentence behind the verdict (None: missing)
    phrasing: str | None = None  # the phrasing that sentence matched

    @property
    def covered(self) -> bool:
        """Whether the concept counts: only a credited one does."""
        return self.verdict is Verdict.CREDITED


@dataclass(frozen=True)
class _Word:
    lemma: str
    negated: bool = False
    # A compound also answers to its last part: mini-batch is a batch, all-reduce a reduce.
    also: str | None = None
    narrow: bool = False  # negated by "without", which denies one word, not the clause

    def means(self, lemma: str) -> bool:
        """Whether this word stands for the given lemma."""
        return lemma in (self.lemma, self.also)


@dataclass(frozen=True)
class _Clause:
    sentence: str
    words: tuple[_Word, ...]  # content words
    statement: bool  # has a verb or the grammar of a sentence
    condition: bool  # "if ...", "unless ...": states no fact
    question: bool


def score(answer: str, concepts: Sequence[Concept]) -> list[ConceptMatch]:
    """One ConceptMatch per concept, in order."""
    clauses = [
        clause
        for sentence in simplemma.split_sentences(answer)
        if sentence.strip()
        for clause in _clauses(sentence.strip())
    ]
    matches = [_judge(concept, clauses) for concept in concepts]
    # A sentence that confidently contradicts one concept is no sure ground for crediting
    # another ("DDP splits the model across the GPUs" is no remedy the learner proposes).
    wrong = {m.sentence for m in matches if m.verdict is Verdict.OPPOSITE}
    return [
        ConceptMatch(m.concept, Verdict.UNSURE, m.sentence, m.phrasing)
        if m.verdict is Verdict.CREDITED and m.sentence in wrong
        else m
        for m in matches
    ]


def _judge(concept: Concept, clauses: list[_Clause]) -> ConceptMatch:
    vocabulary = _vocabulary(concept)
    # A concept named in one or two words ("use all_reduce") is stated by its keyword in a
    # statement; a longer one needs more than a keyword.
    short = SHORT if len(_phrase(concept.name)[0]) > 2 else 1
    opposite: ConceptMatch | None = None
    unsure: ConceptMatch | None = None
    leans_right = False  # some clause says it the right way round, if not confidently
    for phrasing in concept.phrasings:
        lemmas, negative = _phrase(phrasing)
        if not lemmas:
            continue
        for clause in clauses:
            for negated, denied in _find(lemmas, clause.words):
                # Words common to every concept ("one process per GPU") say whose claim it is
                # no more than a keyword does: "DataParallel uses one process per GPU".
                alone = len(set(lemmas)) >= short and not set(lemmas) <= GENERIC
                supported = alone or _supported(clause, lemmas, vocabulary)
                confident = clause.statement and supported and not clause.question
                found = ConceptMatch(concept.name, Verdict.UNSURE, clause.sentence, phrasing)
                if negated == negative and confident and not denied:
                    return ConceptMatch(concept.name, Verdict.CREDITED, clause.sentence, phrasing)
                if negated != negative and confident and not clause.condition and len(lemmas) > 1:
                    opposite = opposite or found
                else:
                    unsure = unsure or found
                    leans_right = leans_right or negated == negative
    if opposite is not None and not leans_right:
        return ConceptMatch(concept.name, Verdict.OPPOSITE, opposite.sentence, opposite.phrasing)
    return unsure or opposite or ConceptMatch(concept.name, Verdict.MISSING)


def _supported(clause: _Clause, lemmas: tuple[str, ...], vocabulary: frozenset[str]) -> bool:
    """Whether the clause holds a word of the concept beyond the phrasing's own (a compound's
    parts included: "non-members" is no support for "non-member")."""
    return any(
        word.lemma in vocabulary or word.also in vocabulary
        for word in clause.words
        if not any(word.means(lemma) for lemma in lemmas)
    )


@lru_cache(maxsize=1024)
def _vocabulary(concept: Concept) -> frozenset[str]:
    words = {word.lemma for text in (concept.name, *concept.phrasings) for word in _content(text)}
    return frozenset(words - GENERIC)


def _find(lemmas: tuple[str, ...], words: tuple[_Word, ...]) -> set[tuple[bool, bool]]:
    """Find the phrasing's lemmas close together; return, for each place found, whether it is
    negated and whether a negation later in the clause denies what it says ("a joined rank
    does not take part")."""
    need = set(lemmas)
    width = len(need) + SLACK
    found: set[tuple[bool, bool]] = set()
    for start, word in enumerate(words):
        if any(word.means(lemma) for lemma in need):
            last = _cover(need, words[start : start + width])
            if last is not None:
                negated = words[start + last].negated
                later = words[start + last + 1 :]
                denied = any(word.negated and not word.narrow for word in later)
                found.add((negated, denied and not negated))
    return found


def _cover(need: set[str], window: tuple[_Word, ...]) -> int | None:
    """Where the last needed lemma is in the window (the predicate, as a rule: "the gradients are
    never averaged"), or None when one is missing."""
    last = -1
    for lemma in need:
        index = next((i for i, word in enumerate(window) if word.means(lemma)), None)
        if index is None:
            return None
        last = max(last, index)
    return last


@lru_cache(maxsize=4096)
def _phrase(phrasing: str) -> tuple[tuple[str, ...], bool]:
    # A phrasing's own compounds must match whole (an answer's "reduce" is no "all-reduce").
    words = [_Word(word.lemma, word.negated) for word in _content(phrasing)]
    negative = bool(words) and words[-1].negated
    return tuple(word.lemma for word in words), negative


def _content(text: str) -> list[_Word]:
    """The content words of a text taken as one clause."""
    return list(_clause(text, _tokens(text)).words)


def _clauses(sentence: str) -> list[_Clause]:
    """A sentence cut at punctuation, before words that open a new clause, and before "and" that
    starts a new subject and verb ("... never synced and the replicas drift apart")."""
    question = sentence.rstrip().endswith("?")
    segments: list[list[tuple[str, _Word]]] = [[]]
    for token in _tokens(sentence):
        if token[0] in _PUNCT:
            segments.append([])
        else:
            segments[-1].append(token)
    segments = [segment for segment in segments if segment]
    # A list of short items, most without the grammar of a sentence, is a list of keywords: it
    # states nothing ("gradient averaging, models stay in sync").
    listed = len(segments) >= 3 and all(len(segment) <= 4 for segment in segments)
    stated = sum(any(raw.lower() in GRAMMAR for raw, _ in segment) for segment in segments)
    if listed and 2 * stated >= len(segments):
        listed = False
    clauses = [
        _clause(sentence, part, question, listed)
        for segment in segments
        for part in _split(segment)
    ]
    # A list that continues a statement is governed by its verb: "the checkpoint must hold the
    # model, the optimizer state and the step". Not after a negation: that would reverse it.
    for index in range(1, len(clauses)):
        before, clause = clauses[index - 1], clauses[index]
        denied = any(word.negated and not word.narrow for word in before.words)
        if before.statement and not clause.statement and not listed and not denied:
            clauses[index] = replace(clause, statement=not clause.condition and bool(clause.words))
    return clauses


def _split(segment: list[tuple[str, _Word]]) -> list[list[tuple[str, _Word]]]:
    parts: list[list[tuple[str, _Word]]] = [[]]
    for index, token in enumerate(segment):
        lemma = token[1].lemma
        opens = lemma in CLAUSE_OPENERS or (
            lemma == "and"
            and index + 1 < len(segment)
            and segment[index + 1][0].lower() in SUBJECT_STARTS
            and _is_statement(segment[index + 1 :])
        )
        if opens and parts[-1]:
            parts.append([])
        parts[-1].append(token)
    return parts


def _clause(
    sentence: str, tokens: list[tuple[str, _Word]], question: bool = False, listed: bool = False
) -> _Clause:
    """Content words with their polarity, and what kind of clause the tokens make."""
    words: list[_Word] = []
    negations = 0
    narrow = False
    lemmas = [word.lemma for _, word in tokens]
    for index, (raw, word) in enumerate(tokens):
        lemma = word.lemma
        if raw in _PUNCT:
            continue
        after = lemmas[index + 1] if index + 1 < len(lemmas) else ""
        if lemma in NEGATIONS and after not in NOT_NEGATING_AFTER:
            negations += 1
            continue
        if raw.lower() in SUBJECTS or lemma in SCOPE_ENDS:  # "is not divisible it pads" pads
            negations = 0
        if lemma in NARROW_NEGATIONS:
            narrow = True
            continue
        if lemma in STOPWORDS or lemma in CLAUSE_OPENERS or lemma in NEGATIONS:
            continue
        negated = (negations % 2 == 1) != narrow
        words.append(_Word(lemma, negated, word.also, narrow))
        narrow = False
    return _Clause(
        sentence=sentence,
        words=tuple(words),
        statement=len(tokens) >= MIN_CLAUSE_WORDS and not listed and _is_statement(tokens),
        condition=bool(lemmas) and lemmas[0] in CONDITIONS,
        question=question,
    )


def _is_statement(tokens: list[tuple[str, _Word]]) -> bool:
    """A verb (inflected, opening an instruction, or after a plural subject) or a sentence's
    grammar words."""
    raws = [raw.lower() for raw, _ in tokens]
    lemmas = [word.lemma for _, word in tokens]
    if any(raw in GRAMMAR for raw in raws):
        return True
    start = 1 if lemmas and lemmas[0] in CLAUSE_OPENERS else 0
    if start < len(lemmas) and lemmas[start] in VERBS:
        return True
    followers = [*raws[1:], ""]
    if any(
        (lemma in VERBS and raw != lemma and raw.endswith(("s", "ed", "ing")))
        or (raw != lemma and raw.endswith("s") and after in OBJECT_STARTS)
        for raw, lemma, after in zip(raws, lemmas, followers, strict=True)
    ):
        return True
    # A plural or numbered subject and a verb: "the replicas (then) drift apart", "ranks 0 and 1
    # call ...".
    for index, (raw, lemma) in enumerate(zip(raws, lemmas, strict=True)):
        if lemma in VERBS and raw == lemma and index > 0:
            before = index - 1
            while before > 0 and raws[before] in ADVERBS:
                before -= 1
            subject = raws[before]
            if subject.isdigit() or (subject != lemmas[before] and subject.endswith("s")):
                return True
    return False


def _tokens(text: str) -> list[tuple[str, _Word]]:
    """Every token of a text with its lemma: "n't" as "not", all-reduce as allreduce."""
    text = re.sub(r"n't\b", " not", text.replace("’", "'"), flags=re.IGNORECASE)
    text = re.sub(r"\bcannot\b", "can not", text, flags=re.IGNORECASE)
    text = _BRACKETED.sub(lambda m: m.group(0).replace(",", " "), text)
    text = re.sub(r"\bor not\b", " ", text, flags=re.IGNORECASE)  # "members or not": either way
    tokens = []
    for token in _TOKEN.findall(text):
        token = re.sub(r"'s$", "", token)  # DDP's hooks: the hooks of DDP
        # A dotted name also answers to its last name: dist.all_reduce is an all_reduce.
        parts = token.split(".") if "." in token else re.split(r"[-_]", token)
        # ...but no_sync is not a sync: a negating first part keeps the compound whole.
        compound = len(parts) > 1 and parts[-1] and parts[0].lower() not in NEGATIONS
        also = _lemma(parts[-1]) if compound else None
        tokens.append((token, _Word(_lemma(token), False, also)))
    return tokens


@lru_cache(maxsize=65536)
def _lemma(token: str) -> str:
    token = token.lower()
    if not token[0].isalnum():
        return token
    joined = token.replace("-", "").replace("_", "").replace("'", "").replace(".", "")
    lemma = simplemma.lemmatize(joined, lang="en").lower()
    # Jargon the dictionary lacks (allreduces, dataloaders): take a plural or verb -s off.
    unknown = lemma == joined and not simplemma.is_known(joined, lang="en")
    if unknown and len(joined) > 4 and joined.endswith("s") and not joined.endswith("ss"):
        lemma = joined[:-1]
    return SAME.get(lemma, lemma)
