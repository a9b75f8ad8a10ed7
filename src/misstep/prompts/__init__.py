"""Judge prompt templates (files under ``templates/``) and their rendering."""

from misstep.prompts._fence import disarm_tags, fence
from misstep.prompts._render import (
    RenderedPrompt,
    estimate_tokens,
    prompt_hash,
    render_judge_prompt,
)
from misstep.prompts._steps import split_steps

__all__ = [
    "RenderedPrompt",
    "disarm_tags",
    "estimate_tokens",
    "fence",
    "prompt_hash",
    "render_judge_prompt",
    "split_steps",
]
