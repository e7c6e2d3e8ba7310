"""Intent clustering with a versioned, tenant-scoped registry (issue 7; docs/clustering.md).

Kept light on purpose: importing the package imports nothing; explicit clustering never loads
torch or numpy-heavy code (`semantic.py` is imported lazily, only for semantic/hybrid versions).

Python API (each takes a `verdict_daemon.store.state.StateStore` and a validated `verdict.tenancy.TenantId`;
the SQL is `verdict_daemon.store.clusters`):
- `analysis_index.normalize(store, data_dir, tenant, limit) -> NormalizeReport` — one backfill page.
- `fitting.fit(store, data_dir, tenant, actor, FitRequest(...)) -> FitResult` — an immutable version.
- `assignment.assign_version(store, data_dir, tenant, version_id, through_cutoff, *, model_path=None)
  -> AssignResult` — set-based assignment of every indexed trace started before `through_cutoff`
  (what bench/clustering.py times: 100,000 explicit-key traces, target <= 2 s).
- `validation.validate`, `pointer.activate`, `pointer.rollback`, `display_names.rename`,
  `inspection.inspect` — the rest of the `verdict-cluster` lifecycle.
- `active.assign_active(store, data_dir, tenant, version)` — the daemon / `verdict-pipeline
  --registry-mode active` seam (`active.require_active` pins the tenant's active version).
"""
