"""The scheduled service: APScheduler jobs sample, judge, assign, drift, alert, export and compact_retain.

- The first four are the cycle's steps (service/cycle.py, the one definition `verdict pipeline` runs too),
  each on its own schedule, with the cycle's one rule for the active registry.

- One daemon per data directory (`<data>/daemon.lock`, an flock released by the kernel on any exit).
- The judge and drift jobs first require a healthy sentinel check of the evaluator ([sentinel]): an
  unhealthy judge is logged as `judge_unhealthy` for that tenant and checked again on the next tick.
- Each job runs every tenant in turn (the alert job side by side); a tenant's failure is logged with a
  closed error code and does not stop the others. Failed work is simply picked up by the next tick.
- Each job starts with the state file's integrity check (StateStore.check; the start reads it in full):
  a broken state file (StateFileBroken: corrupt, deleted or replaced) is no tenant's failure and no
  tick mends it, so the daemon stops and `run` raises it (`state_corrupt`, the file named).
- Missed ticks are coalesced into one run, and a job never overlaps itself.
- SIGTERM/SIGINT: no new work is started, the judge job stops submitting calls and writes what has
  finished, and the scheduler waits for running jobs. A drift run is one transaction, so an
  interrupted one leaves nothing behind.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial

from verdict.pidlock import HeldElsewhere, PidFileLock
from verdict.tenancy import TenantId
from verdict_daemon.config import DaemonConfig, Schedule
from verdict_daemon.errors import DaemonError
from verdict_daemon.lakes import open_lakes
from verdict_daemon.service import alerts, drift_runs
from verdict_daemon.service.cycle import Cycle, build_evaluators, store_for
from verdict_daemon.service.evaluators import Evaluator
from verdict_daemon.service.imported_evaluations import ImportedSeries
from verdict_daemon.service.probe_job import ProbeJob
from verdict_daemon.service.sentinel_health import HealthGate
from verdict_daemon.store.drift_runs import DriftRunReport
from verdict_daemon.store.state import StateFileBroken, StateStore

log = logging.getLogger("verdict.daemon")

# How long shutdown waits for running jobs beyond the judge calls' own grace (writing what finished,
# a webhook POST, a storage lock retry).
JOB_STOP_SLACK_SECONDS = 15.0
ALERT_WORKERS = 16  # tenants whose alerts are posted at once
JOBS = ("sample", "judge", "assign", "drift", "alert", "export", "compact_retain")


class InstanceLock(PidFileLock):
    """One verdict-daemon per data dir."""

    def __init__(self, data_dir) -> None:
        super().__init__(data_dir / "daemon.lock")

    def acquire(self) -> None:
        try:
            super().acquire()
        except HeldElsewhere as held:
            raise DaemonError("already_running",
                              f"another verdict-daemon (pid {held.holder_pid}) is running on {self.path.parent}") from None


def _trigger(schedule: Schedule):
    from apscheduler.triggers.cron import CronTrigger
    from apscheduler.triggers.interval import IntervalTrigger

    if schedule.cron is not None:
        return CronTrigger.from_crontab(schedule.cron, timezone="UTC")
    return IntervalTrigger(seconds=schedule.interval_seconds, timezone="UTC")


class Daemon:
    def __init__(self, config: DaemonConfig, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.config = config
        self.clock = clock  # "now" for sampling windows and drift runs
        store = store_for(config)
        self.lakes = open_lakes(config.data_dir, config.lake).describe()  # a bad lake URL stops the start
        evaluators = build_evaluators(config)  # built (and validated) before any job is scheduled
        config.alerts.token()  # an unset alerts.token_env variable stops the start, not every alert tick
        config.export.evaluations.resolved_headers()  # likewise an unset export.evaluations.headers_env variable
        gate = HealthGate(config.sentinel, evaluators, config.judging.concurrency)
        self.cycle = Cycle(config, store, evaluators, config.clustering.registry_mode, gate)
        # [probes]: suite and models resolved now, so a bad section stops the start, not a 6 a.m. run.
        self.probe_job = ProbeJob(config.probes, config.data_dir, tuple(t.id for t in config.tenants)) \
            if config.probes is not None else None
        self.stop = threading.Event()
        self._stop_requested = False  # set by signal handlers: a plain flag, no lock
        self._lock = InstanceLock(config.data_dir)
        self._running: set[str] = set()  # jobs executing now (touched only by job threads and run())
        self._jobs_changed = threading.Condition()
        self.broken: StateFileBroken | None = None  # why the daemon stopped itself

    @property
    def store(self) -> StateStore:
        return self.cycle.store

    # --- jobs -----------------------------------------------------------------------------------------
    def _each_tenant(self, job: str, work: Callable[[TenantId], object]) -> None:
        for tenant in (t.id for t in self.config.tenants):
            self._for_tenant(job, work, tenant)

    def _for_tenant(self, job: str, work: Callable[[TenantId], object], tenant: TenantId) -> None:
        if self.stop.is_set():
            return
        try:
            work(tenant)
            self.store.set_cursor(tenant, f"{job}.last_success", self.clock().isoformat())
        except StateFileBroken:
            raise  # not this tenant's failure: the daemon stops (_tracked)
        except DaemonError as exc:
            log.error("job=%s tenant=%s error=%s: %s", job, tenant, exc.code, exc.message)
        except Exception as exc:  # a bug must not kill the scheduler thread or the other tenants
            log.error("job=%s tenant=%s error=internal_error: %s", job, tenant, type(exc).__name__,
                      exc_info=log.isEnabledFor(logging.DEBUG))

    def _trusted(self, tenant: TenantId, evaluator: Evaluator) -> None:
        """`judge_unhealthy` unless the evaluator passes its sentinel check (logged by _each_tenant; the job's
        next tick checks again)."""
        if self.cycle.gate is not None:
            self.cycle.gate.require(self.store, tenant, evaluator)

    def sample(self) -> None:
        self._each_tenant("sample", lambda t: self.cycle.sample(t, self.clock()))

    def judge(self) -> None:
        run_id = f"daemon-{self.clock():%Y%m%dT%H%M%S%f}"
        for evaluator in self.cycle.evaluators:
            self._each_tenant("judge", partial(self._judge, evaluator=evaluator, run_id=run_id))
        self._each_tenant("review", self.cycle.route)

    def _judge(self, tenant: TenantId, evaluator: Evaluator, run_id: str) -> object:
        self._trusted(tenant, evaluator)
        report = self.cycle.judge(tenant, evaluator, run_id, self.stop.is_set)
        why = report.low_coverage(self.config.judging)
        if why is not None:  # the service keeps running (the judge may recover), but never silently
            log.warning("job=judge tenant=%s error=low_coverage: %s", tenant, why)
        return report

    def assign(self) -> None:
        self._each_tenant("assign", lambda t: self.cycle.assign(t, self.cycle.pin(t)))

    def drift(self) -> None:
        as_of = self.clock()
        for evaluator in self.cycle.evaluators:
            self._each_tenant("drift", partial(self._drift, evaluator=evaluator, as_of=as_of))
        for series in self.cycle.imported:
            self._each_tenant("drift", partial(self._drift_imported, series=series, as_of=as_of))

    def _drift(self, tenant: TenantId, evaluator: Evaluator, as_of: datetime) -> list[DriftRunReport]:
        """A drift run apart from the assign job: the cycle's registry rule makes it assign under the version
        it pins first (in active mode), so it reads that version's clusters."""
        self._trusted(tenant, evaluator)
        registry = self.cycle.pin(tenant)
        if registry is not None:
            self.cycle.assign(tenant, registry)
        return self.cycle.drift(tenant, evaluator, as_of)

    def _drift_imported(self, tenant: TenantId, series: ImportedSeries, as_of: datetime) -> list[DriftRunReport]:
        """An imported series' look, its traces clustered under the version this job pins (as `_drift`'s)."""
        return self.cycle.drift_imported(tenant, series, as_of, self.cycle.pin(tenant))

    def alert(self) -> None:
        """Every tenant's deliveries side by side (at most ALERT_WORKERS at once): a receiver that stalls on
        one tenant's alerts costs that tenant its deadline, never another tenant its turn."""
        tenants = [t.id for t in self.config.tenants]
        deliver = partial(self._for_tenant, "alert",
                          lambda t: alerts.deliver(self.store, t, self.config.alerts, self.stop.is_set))
        with ThreadPoolExecutor(min(len(tenants), ALERT_WORKERS), thread_name_prefix="alert") as pool:
            for _ in pool.map(deliver, tenants):  # raises a worker's StateFileBroken
                pass

    def export(self) -> None:
        """Judgments out as OTLP evaluation records (service/evaluation_export.py); a failed request is logged
        and counted there, and its attempts wait for the next tick."""
        self._each_tenant("export", lambda t: self.cycle.export(t, self.stop.is_set))

    def probes(self) -> None:
        """Behaviour probes of the target model: one run, a copy per tenant under probes/tenant=<id>/."""
        if self.probe_job is not None:
            self.probe_job()

    def compact_retain(self) -> None:
        """State retention (every tenant's drift cells past `[retention] drift_cells_days`), then the lake's
        compaction and retention unless a collector on this data dir maintains the lake itself."""
        from collector import compaction, lake, retention, retire

        self._each_tenant("compact_retain", self._prune_state)
        lake_lock = lake.LakeLock(self.config.data_dir)
        try:
            lake_lock.acquire()
        except lake.LakeLockedError:
            log.info("job=compact_retain skipped: a collector is running on this data dir and maintains the lake")
            return
        try:
            compaction.recover(self.config.data_dir)
            expired = retention.expire(self.config.data_dir, self.config.retention.days)
            merged = compaction.compact_all(self.config.data_dir, self.config.retention.compact_min_segments)
            retire.purge(self.config.data_dir, self.config.retention.delete_grace_seconds)  # retired by earlier runs
            log.info("job=compact_retain expired=%d compacted=%d", len(expired), merged)
        except OSError as exc:
            log.error("job=compact_retain error=storage_error: %s", type(exc).__name__)
        finally:
            lake_lock.release()

    def _prune_state(self, tenant: TenantId) -> None:
        pruned = drift_runs.prune_cells(self.store, tenant, self.config.retention.drift_cells_days, self.clock())
        log.info("job=compact_retain tenant=%s drift_cells_pruned=%d", tenant, pruned)

    # --- lifecycle ------------------------------------------------------------------------------------
    def _tracked(self, name: str) -> None:
        with self._jobs_changed:
            self._running.add(name)
        try:
            self.store.check()
            getattr(self, name)()
        except StateFileBroken as exc:
            log.error("job=%s error=%s: %s; verdict-daemon stops", name, exc.code, exc.message)
            self.broken = exc
            self.stop.set()
        finally:
            with self._jobs_changed:
                self._running.discard(name)
                self._jobs_changed.notify_all()

    def _wait_for_jobs(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        with self._jobs_changed:
            while self._running and (left := deadline - time.monotonic()) > 0:
                self._jobs_changed.wait(left)
            if self._running:
                log.warning("verdict-daemon: abandoning job(s) %s still running %g s after the stop request "
                            "(their uncommitted work is redone on the next start)",
                            ",".join(sorted(self._running)), grace)

    def request_stop(self) -> None:
        """Safe in a signal handler: Event.set() there could deadlock on the lock the interrupted
        main thread holds inside Event.wait(); the main loop turns this flag into `stop`."""
        self._stop_requested = True

    def run(self) -> None:
        """Block until `request_stop()` (SIGTERM/SIGINT in the CLI) or `stop`, then shut down cleanly."""
        from apscheduler.schedulers.background import BackgroundScheduler

        self._lock.acquire()
        scheduler = BackgroundScheduler(timezone="UTC", job_defaults={
            "coalesce": True, "max_instances": 1, "misfire_grace_time": 3600})
        try:
            self.store.check()  # creates and migrates a new file
            self.store.verify()  # every block read once: a broken file stops the start
            for name in JOBS:
                schedule: Schedule = getattr(self.config.schedules, name)
                if schedule.enabled and (name != "export" or self.config.export.evaluations.endpoint is not None):
                    # Interval jobs also run once at start; cron jobs wait for their first slot.
                    first = {"next_run_time": datetime.now(UTC)} if schedule.interval_seconds else {}
                    scheduler.add_job(self._tracked, _trigger(schedule), args=(name,), id=name, name=name, **first)
            probes = self.config.probes
            if probes is not None and probes.schedule.enabled:
                first = {"next_run_time": datetime.now(UTC)} if probes.schedule.interval_seconds else {}
                scheduler.add_job(self._tracked, _trigger(probes.schedule), args=("probes",), id="probes",
                                  name="probes", **first)
            scheduler.start()
            log.info("verdict-daemon ready data_dir=%s lakes=%s tenants=%s jobs=%s", self.config.data_dir,
                     self.lakes, ",".join(t.id for t in self.config.tenants),
                     ",".join(j.id for j in scheduler.get_jobs()))
            while not (self._stop_requested or self.stop.is_set()):
                time.sleep(0.2)
            self.stop.set()
            log.info("verdict-daemon stopping: waiting for running jobs")
            # wait=False, then a bounded wait of our own: a job stuck past the grace (a storage lock
            # retry, a slow webhook) must not keep the daemon from exiting.
            scheduler.shutdown(wait=False)
            self._wait_for_jobs(self.config.judging.stop_grace_seconds + JOB_STOP_SLACK_SECONDS)
        finally:
            self._lock.release()
        log.info("verdict-daemon stopped")
        if self.broken is not None:
            raise self.broken
