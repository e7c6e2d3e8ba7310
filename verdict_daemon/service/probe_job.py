"""The daemon's scheduled `probes` job ([probes] in verdict.toml): the same run as `verdict probes run`
(verdict_daemon.cli.probes), one copy per tenant."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from verdict.tenancy import InvalidTenantError, validate_tenant_id
from verdict_daemon.errors import DaemonError
from verdict_daemon.probes import PROBES_DIR, format_rate, load_suite_spec, resolve_model_spec

log = logging.getLogger("verdict.daemon")


class ProbeJob:
    """The daemon's `probes` job: the suite and both models are resolved when the daemon starts (a bad
    [probes] section stops it with invalid_config / invalid_suite). Each run asks the target once (the
    same model and suite for every tenant) and writes one copy per configured tenant, stamped with it,
    to `<out_dir>/tenant=<id>/<suite>-<version>-<UTC time>.json`: a report reads only its tenant's
    directory, and removing a tenant's directory removes its runs. A run never raises."""

    def __init__(self, settings: Any, data_dir: Path, tenants: tuple[str, ...]) -> None:
        self.settings = settings
        self.suite = load_suite_spec(str(settings.suite))
        self.target = resolve_model_spec(settings.target_model, settings.target_base_url, "probes.target_model")
        self.judge = resolve_model_spec(settings.judge_model, settings.judge_base_url, "probes.judge_model")
        self.out_dir = settings.out_dir if settings.out_dir is not None else data_dir / PROBES_DIR
        try:
            self.tenants = tuple(validate_tenant_id(t) for t in tenants)
        except InvalidTenantError as exc:
            raise DaemonError("tenant_required", f"tenants: {exc}") from None

    def __call__(self) -> list[Path]:
        from verdict.probes.artifact import write_tenant_artifact
        from verdict.probes.runner import run_suite

        try:
            result = run_suite(self.suite, self.target, self.judge, min_pass_rate=self.settings.min_pass_rate,
                               min_category_pass_rate=self.settings.min_category_pass_rate)
        except Exception as exc:  # a bug must not kill the scheduler thread
            log.error("job=probes error=internal_error: %s", type(exc).__name__,
                      exc_info=log.isEnabledFor(logging.DEBUG))
            return []
        paths = []
        for tenant in self.tenants:
            try:
                path = write_tenant_artifact(result, self.out_dir, tenant)
            except OSError as exc:
                log.error("job=probes tenant=%s error=storage_error: cannot write to %s (%s)", tenant, self.out_dir,
                          exc.strerror)
                continue
            paths.append(path)
            s = result.score
            if result.errors:
                log.error("job=probes tenant=%s error=probe_error: %d of %d probe(s) could not be executed or "
                          "judged; artifact %s", tenant, result.errors, s.probes, path)
            else:
                log.info("job=probes tenant=%s suite=%s-%s pass_rate=%s gate=%s artifact=%s", tenant, self.suite.name,
                         self.suite.version, format_rate(s.pass_rate), "pass" if result.gate.passed else "fail", path)
        return paths
