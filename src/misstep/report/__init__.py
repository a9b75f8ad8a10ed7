"""The self-contained HTML report of a link analysis."""

from misstep.report._report import render_report, report_trace_ids, write_report

__all__ = ["render_report", "report_trace_ids", "write_report"]
