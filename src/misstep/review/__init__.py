"""``misstep review``: a local web app to read the traces behind the numbers and label them.

The graded table, the judge's labels and people's labels served over HTTP on 127.0.0.1, with
a trace's text read on demand from an offset index (``open_trace_texts``) and people's labels
appended durably to ``RUN_DIR/human/<annotator>.jsonl`` (``HumanLabelWriter``)."""

from misstep.review._data import MAX_LIMIT, BadRequest, ReviewData, TraceFilter
from misstep.review._server import COOKIE, CSP, WRITE_HEADER, ReviewServer, make_server
from misstep.review._texts import TraceTexts, clear_text_cache, open_trace_texts
from misstep.review._writer import (
    CANT_TELL,
    HumanLabelWriter,
    ReviewLabel,
    check_annotator,
)

__all__ = [
    "CANT_TELL",
    "COOKIE",
    "CSP",
    "MAX_LIMIT",
    "WRITE_HEADER",
    "BadRequest",
    "HumanLabelWriter",
    "ReviewData",
    "ReviewLabel",
    "ReviewServer",
    "TraceFilter",
    "TraceTexts",
    "check_annotator",
    "clear_text_cache",
    "make_server",
    "open_trace_texts",
]
