"""`verdict report`: one tenant's monitoring state as a single self-contained HTML file.

    from verdict_daemon.report import write_report
    write_report("verdict-data", "acme", "report.html")

Data is aggregated in DuckDB (gather), drawn as inline SVG (charts) and rendered to HTML (render);
see docs/report.md.
"""

from verdict_daemon.report.model import ReportData
from verdict_daemon.report.writer import build_report, write_report

__all__ = ["ReportData", "build_report", "write_report"]
