"""Fixtures of the judge tests: the fake OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.judge.fake_openai import FakeOpenAIServer


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A fresh fake server on 127.0.0.1 for one test."""
    with FakeOpenAIServer() as server:
        yield server
