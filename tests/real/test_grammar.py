"""The grammar bounds against the real xgrammar that vLLM uses:
``tests/judge/test_grammar_bounds.py`` skips in the main venv (no xgrammar there), so the tier
runs it in the vLLM venv."""

from __future__ import annotations

import subprocess

from tests.real._server import REPO_ROOT, VllmEnv


def test_grammar_bounds_hold_in_vllms_xgrammar(vllm_env: VllmEnv) -> None:
    done = subprocess.run(
        [str(vllm_env.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "tests/judge/test_grammar_bounds.py"],
        cwd=REPO_ROOT, env=vllm_env.environ(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert " passed" in out and "skipped" not in out, out[-4000:]
