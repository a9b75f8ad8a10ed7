"""``misstep review``: a local web app to read the traces behind the numbers, label them and
adjudicate people's disagreements.

A ``LabelledRun`` (the graded table, the judge's labels, people's labels, the taxonomy) served
by Starlette on uvicorn (``make_server``), with a trace's text read on demand from an offset
index (``open_trace_texts``) and people's labels appended durably to
``RUN_DIR/human/<annotator>.jsonl`` through ``misstep.labels`` (``HumanLabelWriter``)."""

from misstep.review._data import MAX_LIMIT, BadRequest, ReviewData, TraceFilter
from misstep.review._queue import QueueItem, task_queue
from misstep.review._server import (
    CSP,
    REQUEST_TIMEOUT,
    Grant,
    ReviewServer,
    make_grants,
    make_server,
)
from misstep.review._texts import TraceTexts, clear_text_cache, open_trace_texts

__all__ = [
    "CSP",
    "MAX_LIMIT",
    "REQUEST_TIMEOUT",
    "BadRequest",
    "Grant",
    "QueueItem",
    "ReviewData",
    "ReviewServer",
    "TraceFilter",
    "TraceTexts",
    "clear_text_cache",
    "make_grants",
    "make_server",
    "open_trace_texts",
    "task_queue",
]
