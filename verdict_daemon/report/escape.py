"""Everything a report prints from state goes through `safe`: redacted again (defence in depth: state
holds redacted content already) and HTML-escaped, so stored text can never become markup."""

from __future__ import annotations

import html

from verdict.redact import redact_text


def safe(value: object) -> str:
    return html.escape(redact_text(str(value)), quote=True)
