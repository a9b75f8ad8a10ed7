"""Answer extraction on hand-made responses."""

from __future__ import annotations

import time

import pytest

from misstep.rollouts import extract_answer


@pytest.mark.parametrize(
    ("response", "answer", "method"),
    [
        ("so x = 2.\n\\boxed{2}", "2", "boxed"),
        ("first \\boxed{1} then \\boxed{3}", "3", "boxed"),  # last box wins
        ("\\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{\\sqrt{2}}{2}", "boxed"),  # nested braces
        ("\\fbox{7}", "7", "boxed"),
        ("ok \\boxed{5} and then \\boxed{unclosed", "5", "boxed"),  # unclosed box skipped
        ("<think>try \\boxed{1}</think>The result is \\boxed{4}", "4", "boxed"),
        ("<think>long thought</think>\n<answer>11/24</answer>", "11/24", "answer_tag"),
        ("<answer> $\\frac{1}{2}$ </answer>", "\\frac{1}{2}", "answer_tag"),
        ("Thus the answer is 42.", "42", "answer_phrase"),
        (
            "The final answer is $\\frac{1}{115}$. The sum is 116.",
            "\\frac{1}{115}",
            "answer_phrase",
        ),
        ("Final Answer: 3.5", "3.5", "answer_phrase"),
        ("Answer: x + 1\nmore text", "x + 1", "answer_phrase"),
        # o1-mini's ending (RealCritic): the bold phrase alone, the answer below it
        ("So 5636.\n\n**Final Answer:**\n5636", "5636", "answer_phrase"),
        ("**Final Answer:**  \n\n  $17$\n", "17", "answer_phrase"),
        ("**Final Answer: 3/4**", "3/4", "answer_phrase"),
        ("**Final Answer:**\nThere are **81** lattice points.", "81", "answer_phrase"),
        ("**Final Answer:**\n\\[\n2\n\\]", "2", "answer_phrase"),
        ("**Final Answer:** The value of the expression is **1**.", "1", "answer_phrase"),
        ("**Final Answer:**\n\\(30\\) degrees", "30", "answer_phrase"),
        # a bare phrase ending its line may introduce prose: not read past its line
        ("To find the answer:\nwe add 2 and 3 to get 5", "5", "last_number"),
        ("We get 3 apples, then 4 more, total 7", "7", "last_number"),
        ("The total is 1,234.", "1,234", "last_number"),
    ],
)
def test_extraction_rules(response: str, answer: str, method: str) -> None:
    got = extract_answer(response)
    assert (got.answer, got.method) == (answer, method)


@pytest.mark.parametrize(
    "response",
    [
        "",
        "no numbers here at all",
        "<think>I think \\boxed{3} is it but let me check",  # open think: no answer
        "<think>the answer is 5 maybe",  # open think: phrases are not final answers
        "\\boxed{}",
    ],
)
def test_no_answer(response: str) -> None:
    assert extract_answer(response).answer is None
    assert extract_answer(response).method == "none"


def test_open_think_still_reads_an_answer_tag() -> None:
    got = extract_answer("<think>reasoning \\end{think}\n<answer>116</answer>")
    assert (got.answer, got.method) == ("116", "answer_tag")


def test_text_before_closing_think_is_ignored() -> None:
    # the box sits inside the thinking; after </think> only "the answer is 9" counts
    got = extract_answer("<think>\\boxed{1}</think> so the answer is 9")
    assert (got.answer, got.method) == ("9", "answer_phrase")


def test_fast_on_long_adversarial_text() -> None:
    # 10,000 unclosed boxes: the bounded brace scan keeps this linear
    text = "\\boxed{" * 10_000 + "x" * 10_000
    started = time.perf_counter()
    for _ in range(5):
        extract_answer(text)
    assert time.perf_counter() - started < 5.0


# Tool-integrated responses as ToRA's public GSM8K outputs write them (issue 27): the prose after
# the printed output names other numbers, or the answer as a word.
_PROGRAM = "```python\nprint(solution())\n```\n```output\n{printed}\n```\n{prose}"


@pytest.mark.parametrize(
    ("printed", "prose", "answer", "method"),
    [
        ("16.0", "16 people think that horse #12 will win the big race.", "16.0", "program_output"),
        ("3.0", "Three trucks will be needed to transport 80 flagstones.", "3.0", "program_output"),
        ("2", "Two people accept the position.", "2", "program_output"),
        ("(2, 3)", "The point is found.", "(2, 3)", "program_output"),
        ("sqrt(3)/2", "That is the height.", "sqrt(3)/2", "program_output"),
        # an explicit final answer still wins over the printed output
        ("3.0", "So the answer is $\\boxed{4}$.", "4", "boxed"),
        ("3.0", "The answer is 5.", "5", "answer_phrase"),
        # an error or a sentence printed is not a value: the prose's last number is read
        ("NameError: name 'x' is not defined", "So 5 cars.", "5", "last_number"),
        ("The total is 12", "So 7 cars.", "7", "last_number"),
    ],
)
def test_program_output(printed: str, prose: str, answer: str, method: str) -> None:
    got = extract_answer(_PROGRAM.format(printed=printed, prose=prose))
    assert (got.answer, got.method) == (answer, method)


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("Let us count.\nTwo people accept the position.", "2"),
        ("Ten men can stay upright on the wave.", "10"),
        ("so\nTwenty cookies are left", "20"),
        # a digit on the line wins; a number word elsewhere on the line is prose
        ("Three trucks carry 80 flagstones.", "80"),
        ("This question has no valid choice among all three statements.", None),
    ],
)
def test_number_words_start_the_last_line(response: str, answer: str | None) -> None:
    assert extract_answer(response).answer == answer


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        # Mr-Ben's answer line followed by a note (shared data, mistral-medium's responses)
        ("Step 5: only B fits.\nSolution: Choice_B\nConfidence: 100%", "B"),
        ("Step 4: so A.\nSolution: Choice_A\nNote: The analysis was performed step by step.", "A"),
        ("Solution: Choice_C: 3.82\nTherefore it takes 3.82 hours.", "C"),
        # a list of every letter is no choice: the last number is read
        ("Solution: Choice_A/B/C/D\nThe correct solution is not among them. It should be 0.", "0"),
    ],
)
def test_solution_line_before_a_note(response: str, answer: str) -> None:
    assert extract_answer(response).answer == answer


def test_a_number_word_in_a_compound_is_prose() -> None:
    assert extract_answer("So\nOne-third of them left.").answer is None
