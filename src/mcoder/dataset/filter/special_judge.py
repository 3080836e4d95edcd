"""Spot problems that accept several correct outputs (a special judge), from the statement.

No text comparator can grade "print any of them": a correct program that prints another valid
answer would be marked wrong and the model punished for it. The phrases below are the ones
real statements use; numeric tolerance ("absolute or relative error") is not a special judge,
since the judge's float comparison handles it, and is deliberately not matched.
"""

from __future__ import annotations

import re

from mcoder.dataset.filter.dedup import words

_VERB = r"(?:print|output|return|write)"
_PATTERNS = (
    # "print any of them", "output any such string", "print any" (but not "do not print any ...")
    re.compile(
        rf"(?<!not )(?<!n t )(?<!never )\b{_VERB} any\b(?! (?:extra|other characters|spaces|leading|trailing))"
    ),
    # "if there are multiple answers", "several correct answers", "multiple possible solutions"
    re.compile(r"\b(?:multiple|several|many|more than one) (?:\w+ ){0,2}(?:answers|solutions)\b"),
    # "find any valid coloring", "reconstruct any correct sequence", "any valid answer"
    re.compile(r"\b(?:find|construct|reconstruct|print|output|return) any (?:valid|correct)\b"),
    re.compile(r"\bany (?:valid|correct) (?:answer|solution)s?\b"),
    # "if there exist multiple such permutations, you can pick any of them"; an operation that
    # lets "you choose any index" is not one, hence the "multiple" before and "of them" after.
    re.compile(r"\b(?:multiple|several)\b(?: \w+){0,6} you (?:can|may) (?:pick|choose|select) any of them\b"),
    # "return the answer in any order" (an order-free list compared as text)
    re.compile(rf"\b{_VERB} (?:\w+ ){{0,12}}in any order\b"),
    re.compile(r"\b(?:answer|returned|printed|output) (?:\w+ ){0,3}(?:may|can) be (?:\w+ )?in any order\b"),
    re.compile(r"\banswer (?:\w+ ){0,3}in any order\b"),
)


def special_judge_phrase(statement: str) -> str | None:
    """The first phrase that says several outputs are accepted, or None."""
    text = " ".join(words(statement))
    hits = [m for p in _PATTERNS if (m := p.search(text))]
    if not hits:
        return None
    return min(hits, key=lambda m: m.start()).group(0)
