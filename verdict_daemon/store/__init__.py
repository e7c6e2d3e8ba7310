"""The typed state store: the only SQL against state.duckdb lives here, one module per aggregate.

Each module is a repository over `verdict_daemon.store.state.StateStore` (short transactions, lock retry
with backoff, `storage_locked` past the deadline) that takes a validated `verdict.tenancy.TenantId`
and returns frozen dataclasses, never driver tuples. Callers above hold no connection and write no SQL.
"""
