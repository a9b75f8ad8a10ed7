"""The judge's vocabulary, below storage and the judge: what became of one labelling attempt
(``LabelStatus``), the verdict a judge returns (``Verdict``, its label holding
``LABEL_FIELDS``), and the check that a quoted piece of evidence is in the trace
(``evidence_in_text``). The judge returns verdicts; ``misstep.labels`` stores them."""

from misstep.verdict._evidence import evidence_in_text
from misstep.verdict._status import LabelStatus
from misstep.verdict._verdict import LABEL_FIELDS, RecordedTry, Verdict

__all__ = ["LABEL_FIELDS", "LabelStatus", "RecordedTry", "Verdict", "evidence_in_text"]
