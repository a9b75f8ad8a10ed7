"""The judge: label schema, the Judge protocol, backends, retries and the label store."""

from misstep.judge._record import LABEL_RECORD_VERSION, LabelStatus, StoredLabel

__all__ = ["LABEL_RECORD_VERSION", "LabelStatus", "StoredLabel"]
