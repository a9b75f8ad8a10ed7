"""Step splitting: the linear splitter gives exactly the steps of the former (quadratic) one.

``_old_split`` below is the splitter as it was before its work was made linear (it copied the
whole text before each sentence end and line break); it is the oracle: the fix must not change
one step of a normal trace, since steps are what labels index.
"""

from __future__ import annotations

import gzip
import json
import random
import time
from pathlib import Path

from misstep.prompts import split_steps
from misstep.prompts._steps import _ABBREVIATIONS, _BLANK_LINES, _JOINS, _THINK_TAG


def _old_split(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    steps: list[str] = []
    for part in _THINK_TAG.split(text):
        paragraphs = [p for p in _BLANK_LINES.split(part) if p.strip()]
        for paragraph in paragraphs:
            if len(paragraphs) == 1 or len(paragraph) > 400:
                steps.extend(_old_sentences(paragraph))
            else:
                steps.append(paragraph.strip())
    return [s for s in steps if s]


def _old_sentences(text: str) -> list[str]:
    """Lines and sentences of one paragraph, never cutting a formula (rule 3)."""
    cuts: list[int] = []
    dollars = 0  # inside $...$ (1) or $$...$$ (2)
    depth = 0  # braces, \( \), \[ \]
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt in "([":
                depth += 1
            elif nxt in ")]":
                depth = max(0, depth - 1)
            i += 2  # an escaped character (\$, \{, \%) changes nothing else
            continue
        if ch == "$":
            double = text.startswith("$$", i)
            if dollars == 0:
                dollars = 2 if double else 1
            elif dollars == (2 if double else 1):
                dollars = 0
            i += 2 if double else 1
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif dollars == 0 and depth == 0:
            line_end = ch == "\n" and not _old_joined(text, i)
            sentence_end = ch in ".!?" and i + 1 < n and text[i + 1] in " \t"
            if line_end or (sentence_end and not _old_abbreviation(text, i)):
                cuts.append(i + 1)
        i += 1
    pieces: list[str] = []
    start = 0
    for cut in [*cuts, n]:
        piece = text[start:cut].strip()
        start = cut
        if piece:
            pieces.append(piece)
    return pieces


def _old_abbreviation(text: str, dot: int) -> bool:
    """Whether the ``.`` at ``dot`` ends an abbreviation or a number's letter (``e.g.``)."""
    start = dot
    while start > 0 and (text[start - 1].isalpha() or text[start - 1] == "."):
        start -= 1
    word = text[start:dot].lower()
    if word in _ABBREVIATIONS:
        return True
    digits = dot
    while digits > 0 and text[digits - 1].isdigit():
        digits -= 1
    if 0 < dot - digits <= 2:
        # "2. Then": an enumerator at a sentence start, not the end of "is 14. Next"
        before = text[:digits].rstrip(" \t")
        return not before or before[-1] in ".!?:\n"
    return False


def _old_joined(text: str, newline: int) -> bool:
    """Whether a line break sits inside a calculation: the line before ends with a relation or
    an operator, or the next starts with one."""
    before = text[:newline].rstrip(" \t")
    after = text[newline + 1 :].lstrip(" \t")
    return before.endswith(_JOINS) or after.startswith(_JOINS)


def _responses(shared_data: Path) -> list[str]:
    texts: list[str] = []
    for name in ("processbench", "mrben"):
        with open(shared_data / name / "traces.jsonl", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                texts.append(row["response"])
                texts.append("\n".join(row["steps"]))  # one paragraph: the sentence rule
    path = shared_data / "reasoning_gym_eval" / "llama_rl_ckpts.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i % 6 == 0:  # a sixth of the RL run keeps the test short
                texts.append(json.loads(line)["response"])
    return texts


def test_real_responses_split_exactly_as_before(shared_data: Path) -> None:
    texts = _responses(shared_data)
    assert len(texts) > 10_000
    differ = [t[:200] for t in texts if split_steps(t) != _old_split(t)]
    assert differ == []


def test_random_texts_of_special_characters_split_exactly_as_before() -> None:
    # brute force over the characters the rule reacts to: escapes, dollars, braces, sentence
    # ends, enumerators, abbreviations, joins at line breaks, think tags, a long paragraph
    alphabet = [
        "a", "e", "g", ".", ". ", "\n", " ", "\t", "$", "$$", "{", "}", "\\", "\\(", "\\)",
        "\\[", "\\]", "1", "12", "123", "=", "+", "\\times", "approx", "e.g", "i.e", "etc",
        "No", "!", "?", ":", "\n\n", "<think>", "</think>", "x" * 450,
    ]  # fmt: skip
    rng = random.Random(7)
    for _ in range(5_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert split_steps(text) == _old_split(text), text


def test_a_long_paragraph_is_split_in_linear_time() -> None:
    # 3 MB in one paragraph with a line break and an enumerator every 20 characters: the former
    # splitter copied the text before (and after) each of these 300,000 places, about 450 GB of
    # copying (minutes); a linear pass takes well under a second. A hang guard, not a speed
    # target: the bound is 20 times what the linear pass needs on a loaded machine.
    line = "so 3 + 4 is 7. 12. "
    text = (line + "\n") * 150_000
    start = time.perf_counter()
    steps = split_steps(text)
    assert time.perf_counter() - start < 10.0
    # "7. " ends a sentence; "12." then starts one, so it is an enumerator and not cut after;
    # the line break cuts (neither side is an operator): two steps per line
    assert steps[:3] == ["so 3 + 4 is 7.", "12.", "so 3 + 4 is 7."]
    assert len(steps) == 300_000
