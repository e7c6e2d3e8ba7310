"""`verdict ui`: a local web app over one data dir's span lake and state.duckdb (issue 20).

Server-rendered pages on Starlette (verdict_ui.app.create_app): the overview (the report's panels,
live), traces with their judgments and span trees, conversations turn by turn, the review queue with blind
labelling, and signal drill-downs.
Every page reads a tenant-scoped snapshot (verdict_ui.snapshot) built exactly like `verdict sql`'s
views; labels go through verdict_daemon.review.record_labels like `verdict review label`. Nothing in
the product imports this package. See docs/ui.md.
"""
