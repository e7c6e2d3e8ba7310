"""Tenant ids: one validation rule for every entry point (SDK, collector, daemon, CLIs).

`TenantId` is a `str` that passed `validate_tenant_id`. The edges (CLI arguments, config files,
collector auth, the UI's login) validate once and pass a `TenantId` on; internals take `TenantId`
and do not validate again: mypy refuses a plain `str` where a `TenantId` is expected.
"""

from __future__ import annotations

import re
from typing import NewType

TenantId = NewType("TenantId", str)

# Reserved scope for tokenless local use; never a customer tenant id.
LOCAL_TENANT = TenantId("__verdict_local__")

_TENANT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")


class InvalidTenantError(ValueError):
    pass


def validate_tenant_id(tenant_id: object, *, allow_local: bool = True) -> TenantId:
    """Return `tenant_id` if it is a valid tenant id, else raise InvalidTenantError saying why.

    Valid: 1-63 chars of lower-case letters, digits, '_' and '-', starting with a letter or digit
    (safe as a hive partition value and a path component). `__verdict_local__` only when allowed.
    """
    if not isinstance(tenant_id, str):
        raise InvalidTenantError(f"tenant id must be a string, got {type(tenant_id).__name__}")
    if tenant_id == LOCAL_TENANT:
        if allow_local:
            return LOCAL_TENANT
        raise InvalidTenantError(f"{LOCAL_TENANT!r} is reserved for tokenless local use")
    if not _TENANT_RE.fullmatch(tenant_id):
        raise InvalidTenantError(
            f"invalid tenant id {tenant_id[:80]!r}: use 1-63 characters of a-z, 0-9, '_' or '-', "
            "starting with a letter or digit"
        )
    return TenantId(tenant_id)
