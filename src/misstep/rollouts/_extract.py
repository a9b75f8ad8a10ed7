"""Final-answer extraction from a model's response.

The rules, tried in this order (the first that finds an answer wins; each has a ``method`` name):

0. Region. When the response holds a closing ``</think>``, only the text after the *last* one is
   searched. When it opens ``<think>`` but never closes it, the model never left its reasoning:
   only an explicit ``<answer>...</answer>`` tag may still give an answer (rule 2); the other
   rules would pick up intermediate results, so the response has no answer otherwise.
1. ``boxed``: the last ``\\boxed{...}`` or ``\\fbox{...}`` (nested braces honoured; an unclosed
   one is skipped in favour of the one before it).
2. ``answer_tag``: the content of the last ``<answer>...</answer>`` pair (Reasoning Gym style),
   or of an ``<answer>`` left open at the end of the response (``<answer> 42``: vLLM leaves a
   stop string such as ``</answer>`` out of the text it returns), up to 300 characters.
3. ``hash_mark``: GSM8K's ending, the text after ``####`` on the last line that starts with it.
4. ``answer_phrase``: the last of "final answer is X", "the answer is X", "correct answer is
   X", "best answer is X", "final answer: X", "answer: X" (case-insensitive). X runs to the
   end of its line, past Markdown emphasis around the phrase (``**Final Answer:** X``; an
   emphasised phrase alone on its line takes the next non-empty line, at most two down:
   ``**Final Answer:**`` then X below, its ``**bold**`` part if any); a leading ``$...$`` or
   ``\\(...\\)`` is unwrapped, otherwise X stops at the first sentence end (". "); a trailing
   period is dropped.
5. ``choice``: a multiple-choice ending on the last non-empty line: "Solution: Choice_B",
   "Choice\\_B", "Option C", "(C)" or "C)" alone, "... is (B) Sb."; else a line "Solution:
   Choice_B" among the last 600 characters (Mr-Ben's answer line, followed by a note); the
   answer is the letter.
6. ``program_output``: in a tool-integrated response (prose, Python, its printed output in an
   ``output`` block fenced by three backquotes), the last line of the last output block when
   it is a value (a number, a fraction, a tuple: no word of three or more letters, no error),
   as the ToRA and Qwen2.5-Math harnesses read such responses: the prose after it often names
   other numbers ("16 people think that horse #12 will win").
7. ``last_number``: the last number (``-1,234.5``, ``3/4``) on the last non-empty line; when
   it holds none, a number written as a word that starts that line ("Two people accept the
   position.", "Ten men can stay upright": zero to twenty and the tens).

Otherwise ``method`` is ``none`` and ``answer`` is None. Everything scans from the end with
``rfind`` and bounded loops, so a 10 KB response costs microseconds; no regular expression runs
over more than the last line (the "Solution:" line: the last 600 characters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Extraction", "extract_answer"]

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_BOX_COMMANDS = ("\\boxed{", "\\fbox{")
# Longest answer we accept from the phrase and tag rules: longer is prose, not an answer.
_MAX_ANSWER_CHARS = 300
_PHRASES = (
    "final answer is",
    "the answer is",
    "correct answer is",
    "best answer is",  # Llama 3.1's multiple-choice ending: "The best answer is B."
    "correct option is",
    "correct choice is",
    "final answer:",
    "answer:",
)
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_CHOICE_LINE = re.compile(
    r"(?:\b(?:choice|option)\s*\\?_?\s*\(?([A-J])\)?(?![A-Za-z])|^\s*(?:solution:\s*)?\(?([A-J])\)\.?\s*$"
    # "The symbol for antimony is (B) Sb.", "the correct statement is (B)."
    r"|\bis:?\s*\**\(([A-J])\))",
    re.IGNORECASE,
)
_LAST_LINE_CHARS = 400
# Mr-Ben's answer line, "Solution: Choice_B", followed by a note ("Note: ...", "Confidence:
# 100%"): found within the response's last characters when the last line holds no choice.
_SOLUTION_CHOICE = re.compile(r"^\s*solution:\s*choice\s*\\?_?\s*([A-J])\b(?!/)", re.I | re.M)
_SOLUTION_TAIL_CHARS = 600
# A \boxed{ whose brace does not close within this many characters is treated as unclosed,
# which keeps many unclosed boxes in one response from costing quadratic time.
_MAX_BOX_SCAN = 2000
# Only the last few boxes are tried: with the scan cap this bounds the cost per response.
_MAX_BOX_TRIES = 16
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?|-?\.\d+")
_OUTPUT_OPEN = "```output"
_MAX_OUTPUT_CHARS = 100
# A printed value: no word of three letters or more (an error, a sentence) except sympy's
# functions and constants.
_OUTPUT_WORD = re.compile(r"[A-Za-z]{3,}")
_OUTPUT_WORDS = frozenset({"sqrt", "exp", "log", "sin", "cos", "tan", "Rational", "pi"})
_UNITS_AND_TEENS = re.findall(
    r"\w+",
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty",
)
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80}
_WORD_NUMBERS = dict(zip(_UNITS_AND_TEENS, range(21), strict=True)) | _TENS | {"ninety": 90}
# Only as the first word of the last line ("Two people accept the position."): elsewhere a
# number word is mostly prose ("one of the conditions", "all three statements").
_WORD_NUMBER = re.compile(r"\s*(" + "|".join(_WORD_NUMBERS) + r")(?![\w-])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Extraction:
    """What ``extract_answer`` found: the answer text and the rule that found it."""

    answer: str | None
    method: str


_NONE = Extraction(None, "none")


def _matching_brace(text: str, open_idx: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``open_idx``, or -1 when it never closes."""
    depth = 0
    i = open_idx
    n = min(len(text), open_idx + _MAX_BOX_SCAN)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2  # an escaped brace such as \{ does not count
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _last_boxed(text: str) -> str | None:
    end = len(text)
    for _ in range(_MAX_BOX_TRIES):
        best = -1
        best_cmd = ""
        for cmd in _BOX_COMMANDS:
            pos = text.rfind(cmd, 0, end)
            if pos > best:
                best, best_cmd = pos, cmd
        if best < 0:
            return None
        brace = best + len(best_cmd) - 1
        close = _matching_brace(text, brace)
        if close >= 0:
            content = text[brace + 1 : close].strip()
            if content:
                return content
        end = best  # unclosed or empty: try the previous one
    return None


def _last_answer_tag(text: str) -> str | None:
    opened = text.rfind("<answer>")
    if opened < 0:
        return None
    close = text.find("</answer>", opened)
    if close < 0:
        # left open at the end: a stop string "</answer>" is not part of vLLM's output
        found = _tag_content(text[opened + len("<answer>") :])
        if found is not None:
            return found
        close = text.rfind("</answer>")
        if close < 0:
            return None
        opened = text.rfind("<answer>", 0, close)
        if opened < 0:
            return None
    return _tag_content(text[opened + len("<answer>") : close])


def _tag_content(content: str) -> str | None:
    content = content.strip()
    if not content or len(content) > _MAX_ANSWER_CHARS:
        return None
    boxed = _last_boxed(content)
    return boxed if boxed is not None else _unwrap_dollars(content)


def _unwrap_dollars(text: str) -> str:
    text = text.strip()
    if text.startswith("$"):
        inner = text.lstrip("$")
        stop = inner.find("$")
        if stop > 0:
            return inner[:stop].strip()
        return inner.strip()
    return text


def _after_phrase(text: str) -> str | None:
    lowered = text.lower()
    best = -1
    best_len = 0
    for phrase in _PHRASES:
        pos = lowered.rfind(phrase)
        # On ties "final answer is" beats "the answer is" (they overlap); longest match wins.
        if pos > best or (pos == best and len(phrase) > best_len):
            best, best_len = pos, len(phrase)
    if best < 0:
        return None
    rest = text[best + best_len :]
    line = _phrase_line(rest)
    if not line:
        return None
    line = line.replace("\u202f", " ").replace("\xa0", " ")  # narrow and no-break spaces
    if line.startswith("$"):
        answer = _unwrap_dollars(line)
    elif line.startswith("\\(") and "\\)" in line:  # \(30\) degrees: the math is the answer
        answer = line[2 : line.index("\\)")]
    else:
        answer = line
        for stop in (". ", "; "):
            cut = answer.find(stop)
            if cut > 0:
                answer = answer[:cut]
        answer = answer.rstrip(" .")
    boxed = _last_boxed(answer)
    if boxed is not None:
        answer = boxed
    answer = answer.strip().rstrip(".").strip()
    if not answer or len(answer) > _MAX_ANSWER_CHARS:
        return None
    return answer


def _phrase_line(rest: str) -> str:
    """The text an answer phrase introduces: the rest of its line, past the colon and the
    Markdown emphasis around the phrase (``**Final Answer:** 42``), without a closing ``**``.
    Only where the phrase is in emphasis and nothing follows it on its line, the next
    non-empty line, at most two down (o1-mini ends ``**Final Answer:**`` with the answer on
    the line below: its emphasised part where it has one, "There are **81** lattice points";
    a display ``\\[ ... \\]`` over the lines below whole); a bare "answer:" ending its line may
    introduce prose, so it gives none."""
    lines = rest.split("\n", 6)
    line = lines[0].strip().lstrip(":*_").strip()
    if line or not rest.lstrip(":").startswith(("*", "_")):
        bold = _BOLD.findall(line)  # "**Final Answer:** The value is **1**"
        return bold[-1].strip() if bold else line.removesuffix("**").strip()
    below = [nxt.strip() for nxt in lines[1:6]]
    first = next((i for i, nxt in enumerate(below[:2]) if nxt), None)
    if first is None:
        return ""
    line = below[first]
    if line in ("\\[", "$$"):  # display math over lines: \[ / 42 / \]
        close = "\\]" if line == "\\[" else "$$"
        body = below[first + 1 :]
        if close in body:
            return " ".join(body[: body.index(close)])
    # the emphasised part of a sentence is its answer: "There are **81** lattice points"
    bold = _BOLD.findall(line)
    return bold[-1].strip() if bold else line


def _last_line(text: str) -> str:
    stripped = text.rstrip()
    start = stripped.rfind("\n") + 1
    return stripped[max(start, len(stripped) - _LAST_LINE_CHARS) :]


def _hash_mark(text: str) -> str | None:
    pos = text.rfind("####")
    if pos < 0 or (pos > 0 and text[pos - 1] != "\n"):
        return None
    line = text[pos + 4 :].split("\n", 1)[0].strip().rstrip(".").strip()
    return line if line and len(line) <= _MAX_ANSWER_CHARS else None


def _choice(text: str) -> str | None:
    found = _CHOICE_LINE.findall(_last_line(text))
    if not found:
        tail = text[-_SOLUTION_TAIL_CHARS:]
        marked = _SOLUTION_CHOICE.findall(tail)
        return marked[-1].upper() if marked else None
    letter: str = next(g for g in found[-1] if g)
    return letter.upper()


def _last_number(text: str) -> str | None:
    stripped = text.rstrip()
    start = stripped.rfind("\n") + 1
    line = stripped[max(start, len(stripped) - _LAST_LINE_CHARS) :]
    found = _NUMBER.findall(line)
    if not found:
        return None
    return str(found[-1]).rstrip(",")


def _program_output(text: str) -> str | None:
    """The last line of the last ``output`` block when it is a printed value."""
    start = text.rfind(_OUTPUT_OPEN)
    if start < 0:
        return None
    start += len(_OUTPUT_OPEN)
    end = text.find("```", start)
    block = text[start : end if end >= 0 else len(text)].strip()
    line = block[block.rfind("\n") + 1 :].strip()
    if not line or len(line) > _MAX_OUTPUT_CHARS or not any(c.isdigit() for c in line):
        return None
    if any(word not in _OUTPUT_WORDS for word in _OUTPUT_WORD.findall(line)):
        return None
    return line


def _word_number(text: str) -> str | None:
    found = _WORD_NUMBER.match(_last_line(text))
    return str(_WORD_NUMBERS[found.group(1).lower()]) if found else None


def extract_answer(response: str) -> Extraction:
    """The final answer of ``response`` and the rule that found it (see the module docstring)."""
    close = response.rfind(_THINK_CLOSE)
    if close >= 0:
        region = response[close + len(_THINK_CLOSE) :]
    elif _THINK_OPEN in response:
        tagged = _last_answer_tag(response)
        return Extraction(tagged, "answer_tag") if tagged is not None else _NONE
    else:
        region = response
    boxed = _last_boxed(region)
    if boxed is not None:
        return Extraction(boxed, "boxed")
    tagged = _last_answer_tag(region)
    if tagged is not None:
        return Extraction(tagged, "answer_tag")
    marked = _hash_mark(region)
    if marked is not None:
        return Extraction(marked, "hash_mark")
    phrase = _after_phrase(region)
    if phrase is not None:
        return Extraction(phrase, "answer_phrase")
    choice = _choice(region)
    if choice is not None:
        return Extraction(choice, "choice")
    printed = _program_output(region)
    if printed is not None:
        return Extraction(printed, "program_output")
    number = _last_number(region)
    if number is None:
        number = _word_number(region)
    if number is not None:
        return Extraction(number, "last_number")
    return _NONE
