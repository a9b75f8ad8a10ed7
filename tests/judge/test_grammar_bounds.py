"""The per-trace bounds as xgrammar enforces them (the compile vLLM's xgrammar backend makes
with ``disable_any_whitespace``). Needs xgrammar (the real-vLLM tier); skipped elsewhere."""

from __future__ import annotations

import json

import pytest

from misstep.judge import bounded_schema, label_json_schema
from misstep.taxonomy import load_taxonomy

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string as accepts  # noqa: E402


def _label(step: int = 1, evidence: str = "2 + 2 = 5", explanation: str = "Adds wrong.") -> str:
    label = {"first_error_step": step, "evidence": evidence, "explanation": explanation,
             "error_type": "arithmetic", "confidence": 0.5}  # fmt: skip
    return json.dumps(label, separators=(",", ":"))


def test_the_grammar_holds_the_steps_shown_and_the_string_bounds() -> None:
    schema = bounded_schema(label_json_schema(load_taxonomy(None)), 4)  # steps 0..3
    grammar = xgr.Grammar.from_json_schema(
        json.dumps(schema), any_whitespace=False, separators=(",", ":")
    )
    assert accepts(grammar, _label(step=3))
    assert not accepts(grammar, _label(step=4))  # step 4 of a 4-step trace
    assert not accepts(grammar, _label(step=9))
    assert accepts(grammar, _label(explanation="a" * 400))
    assert not accepts(grammar, _label(explanation="a" * 401))  # a loop ends at the bound
    # a bounded string admits no escape: the quote is a fragment without backslashes
    assert not accepts(grammar, _label(evidence="\\\\frac{1}{2}"))
    assert not accepts(grammar, _label(step=1).replace(":1,", ": 1,"))  # no free whitespace


def test_a_small_token_budget_shrinks_the_strings_in_the_grammar() -> None:
    # 256 tokens: evidence at most 82 characters, explanation at most 109 (test_exchange.py)
    schema = bounded_schema(label_json_schema(load_taxonomy(None)), 4, max_tokens=256)
    grammar = xgr.Grammar.from_json_schema(
        json.dumps(schema), any_whitespace=False, separators=(",", ":")
    )
    assert accepts(grammar, _label(evidence="e" * 82, explanation="a" * 109))
    assert not accepts(grammar, _label(explanation="a" * 110))
    assert not accepts(grammar, _label(evidence="e" * 83))
