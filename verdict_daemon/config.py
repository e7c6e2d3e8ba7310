"""verdict.toml: the daemon's configuration, validated with pydantic on start.

Errors name the field path and the reason (`evaluators[0].model: ...`). Secrets never appear in the
file: model clients read their keys from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY), and
the webhook's bearer token is named by an environment variable (`alerts.token_env`).
"""

from __future__ import annotations

import os
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from verdict.conversation import DEFAULT_INACTIVITY_MINUTES
from verdict.tenancy import InvalidTenantError, TenantId, validate_tenant_id
from verdict_daemon.errors import DaemonError

# Every number has finite bounds that make sense, checked at start (invalid_config naming the key): a value
# that passes validation must not overflow a timedelta or a timer later, nor make a wait endless.
YEAR_HOURS = 366 * 24
DAY_SECONDS = 86_400
MANY = 10_000_000  # counts (traces, calls, examples): far above any real run, far below overflow


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Schedule(_Section):
    """Either `interval_seconds` or a five-field `cron` expression (UTC)."""

    interval_seconds: float | None = Field(None, ge=0.1, le=366 * DAY_SECONDS)
    cron: str | None = None
    enabled: bool = True

    @model_validator(mode="after")
    def _one_trigger(self) -> Schedule:
        if (self.interval_seconds is None) == (self.cron is None):
            raise ValueError("give exactly one of interval_seconds or cron")
        if self.cron is not None:
            from apscheduler.triggers.cron import CronTrigger

            try:
                CronTrigger.from_crontab(self.cron, timezone="UTC")
            except ValueError as exc:
                raise ValueError(f"invalid cron expression {self.cron!r}: {exc}") from None
        return self


class Schedules(_Section):
    sample: Schedule = Schedule(interval_seconds=300)
    judge: Schedule = Schedule(interval_seconds=60)
    assign: Schedule = Schedule(interval_seconds=60)
    drift: Schedule = Schedule(cron="5 * * * *")
    alert: Schedule = Schedule(interval_seconds=30)
    compact_retain: Schedule = Schedule(cron="17 3 * * *")
    export: Schedule = Schedule(interval_seconds=60)  # runs only with [export.evaluations] endpoint set


class Sampling(_Section):
    seed: int = 0
    window_hours: float = Field(24, ge=1 / 60, le=YEAR_HOURS)
    per_cluster_per_window: int = Field(100, ge=1, le=MANY)
    max_traces_per_run: int = Field(10_000, ge=1, le=MANY)
    lookback_days: float = Field(9, gt=0, le=3660)
    # DuckDB's memory cap for a sample run; past it the run spills to a private temp directory
    memory_limit_mb: int = Field(256, ge=128, le=1_048_576)


# About 4,000 characters: the last few exchanges of a support chat, enough for "yes, do that" to have its
# referent, at a small share of a judge call's input (the rubric prompt alone is ~600 tokens).
DEFAULT_HISTORY_TOKENS = 1000
# The steps of an agent run's tool trajectory the sampler stores (the newest): what a judge can be shown at most.
MAX_TRAJECTORY_STEPS = 20
# About 16,000 characters: a support conversation of a dozen exchanges whole, at a judge call's usual size.
DEFAULT_CONVERSATION_TOKENS = 4000


class Conversations(_Section):
    """Turns of a conversation and agent runs (docs/conversations.md): where one conversation ends, how much of
    the conversation so far a judged turn is shown (tokens estimated as characters / 4; 0 turns history off), and
    how many steps of an agent run's tool trajectory an evaluator with `trajectory = true` is shown at most (0: none
    for any evaluator), and how much of a closed conversation a conversation evaluator is shown."""

    inactivity_minutes: float = Field(DEFAULT_INACTIVITY_MINUTES, gt=0, le=YEAR_HOURS * 60)
    history_tokens: int = Field(DEFAULT_HISTORY_TOKENS, ge=0, le=1_000_000)
    trajectory_steps: int = Field(MAX_TRAJECTORY_STEPS, ge=0, le=MAX_TRAJECTORY_STEPS)
    # How much of a closed conversation a conversation evaluator (unit = "conversation") is shown: its newest turns
    # within this many tokens (characters / 4), the oldest dropped first.
    conversation_tokens: int = Field(DEFAULT_CONVERSATION_TOKENS, ge=1, le=1_000_000)


class Budget(_Section):
    max_calls: int | None = Field(None, ge=1, le=10**12)
    max_tokens: int | None = Field(None, ge=1, le=10**15)
    max_cost_usd: float | None = Field(None, gt=0, le=10**9)


class Judging(_Section):
    concurrency: int = Field(16, ge=1, le=1024)
    max_attempts: int = Field(3, ge=1, le=100)
    # After SIGTERM, judge calls in flight get this long to finish; then they are abandoned (not
    # written; judged again on the next start) so a hung provider cannot block shutdown.
    stop_grace_seconds: float = Field(15, ge=0, le=600)
    # A run whose first `early_stop_after` results all failed with one error class (a refused parameter,
    # a server error, unusable replies, an outage) stops for that evaluator instead of spending its budget;
    # 0 never stops early.
    early_stop_after: int = Field(5, ge=0, le=10_000)
    # A run is low coverage (`verdict pipeline`: exit 2, low_coverage) when an evaluator had at least
    # `low_coverage_min_traces` traces to judge and at most `low_coverage_share` of them got a usable judgment:
    # by default, none usable out of 10 or more (a judge answering prose, a refused parameter).
    low_coverage_min_traces: int = Field(10, ge=1, le=MANY)
    low_coverage_share: float = Field(0.0, ge=0.0, lt=1.0)
    budget: Budget = Budget()


EvaluatorKind = Literal["rubric", "ensemble", "graph"]
EvaluatorUnit = Literal["turn", "conversation"]


class EvaluatorConfig(_Section):
    """`rubric`: a rubric Judge on `model`; `ensemble`: a JudgeEnsemble over `models`; `graph`: any judge
    graph given as `module:attribute` (a Pipeline, or a callable returning one)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
    kind: EvaluatorKind
    model: str | None = None
    models: tuple[str, ...] = ()
    rubric_file: Path | None = None
    rubric: str | None = None  # a shipped rubric by name (verdict.judges.rubric.SHIPPED_RUBRICS)
    graph: str | None = None
    # rubric/ensemble: grade one dimension per call (verdict first; for small and local models).
    per_dimension: bool = False
    # Shown an agent run's tool trajectory ([conversations] trajectory_steps); only then does the trajectory enter
    # this evaluator's fingerprint (docs/conversations.md).
    trajectory: bool = False
    # What it judges: each sampled trace ("turn", with its history and trajectory) or each closed conversation as
    # a whole ("conversation"; rubric/ensemble default to the shipped conversation rubric).
    unit: EvaluatorUnit = "turn"

    @model_validator(mode="after")
    def _fields_for_kind(self) -> EvaluatorConfig:
        needs = {"rubric": "model", "ensemble": "models", "graph": "graph"}[self.kind]
        if not getattr(self, needs):
            raise ValueError(f"kind {self.kind!r} needs {needs!r}")
        for name in ("model", "models", "graph"):
            if name != needs and getattr(self, name):
                raise ValueError(f"{name!r} does not apply to kind {self.kind!r}")
        if self.per_dimension and self.kind == "graph":
            raise ValueError("'per_dimension' does not apply to kind 'graph'")
        if self.kind == "graph" and self.rubric is not None:
            raise ValueError("'rubric' does not apply to kind 'graph'")
        if self.rubric is not None and self.rubric_file is not None:
            raise ValueError("give at most one of 'rubric' (a shipped rubric) and 'rubric_file'")
        if self.rubric is not None:
            from verdict.judges.rubric import SHIPPED_RUBRICS

            if self.rubric not in SHIPPED_RUBRICS:
                raise ValueError(f"rubric {self.rubric!r} is not a shipped rubric (shipped: "
                                 f"{', '.join(sorted(SHIPPED_RUBRICS))})")
        if self.kind == "ensemble" and len(self.models) < 2:
            raise ValueError("an ensemble needs at least two models")
        if self.graph is not None and not _is_target(self.graph):
            raise ValueError(f"graph must look like 'package.module:attribute', got {self.graph!r}")
        return self


class ImportedEvaluation(_Section):
    """A drift series over other evaluators' `gen_ai.evaluation.result` records (the lake's `evaluations` view;
    service/imported_evaluations.py): the records of `evaluator` (and `evaluator_version`, when given) whose
    evaluation name is one of `evaluations`, one dimension each, read as verdicts (`scale = "label"`: the
    documented labels pass / fail / unclear / error) or as scores (`scale = "score"`: `score.value`)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
    evaluator: str = Field(min_length=1, max_length=256)  # gen_ai.evaluation.evaluator.name
    evaluator_version: str | None = Field(None, min_length=1, max_length=256)
    evaluations: tuple[Annotated[str, Field(min_length=1, max_length=256)], ...] = Field(min_length=1)
    scale: Literal["label", "score"] = "label"


def _is_target(text: str) -> bool:
    module, sep, attribute = text.partition(":")
    return bool(sep and module and attribute) and all(p.isidentifier() for p in (*module.split("."), *attribute.split(".")))


class DimensionGate(_Section):
    """The effect gate of one dimension, in its unit: `points` of pass rate (PASS/FAIL) or Cliff's `delta`."""

    points: float | None = Field(None, ge=0, le=100)
    delta: float | None = Field(None, ge=0, le=1)

    @model_validator(mode="after")
    def _one_unit(self) -> DimensionGate:
        if (self.points is None) == (self.delta is None):
            raise ValueError("give exactly one of points or delta")
        return self

    @property
    def share(self) -> float:
        return self.points / 100 if self.points is not None else cast(float, self.delta)  # one of the two (_one_unit)


class Drift(_Section):
    """Alert period = `current_window_hours` on the UTC grid (days by default); see drift_runs for the
    per-period false-alarm budget: `alpha` split into early looks and one decision per closed period."""

    current_window_hours: float = Field(24, ge=1 / 60, le=YEAR_HOURS)
    gap_hours: float = Field(24, ge=0, le=YEAR_HOURS)
    baseline_days: float = Field(7, gt=0, le=3660)
    alpha: float = Field(0.05, gt=0, lt=1)
    early_alpha_share: float = Field(0.2, ge=0, lt=1)
    coverage_alpha_share: float = Field(0.1, ge=0, lt=1)  # of each run's level, for coverage_drop tests
    catch_up_periods: int = Field(7, ge=1, le=366)  # closed periods a look still decides if nobody did
    correction: Literal["bh", "holm", "bonferroni"] = "bh"
    pass_rate_gate_points: float = Field(5, ge=0, le=100)
    delta_gate: float = Field(0.147, ge=0, le=1)
    dimension_gates: dict[str, DimensionGate] = {}
    min_usable: int = Field(30, ge=2, le=MANY)
    # Real traffic (docs/statistics.md): weekly patterns and a reference that does not slide.
    seasonality: Literal["off", "weekly", "auto"] = "auto"
    seasonal_weeks: int = Field(3, ge=1, le=52)
    seasonal_check_alpha: float = Field(0.01, gt=0, lt=1)
    reference_weeks: int = Field(3, ge=0, le=52)
    # Cells under min_usable in the alert period are tested over this many weeks, once per that many weeks.
    small_cell_weeks: int = Field(1, ge=0, le=4)

    @model_validator(mode="after")
    def _small_cells_span_more_than_a_period(self) -> Drift:
        if self.small_cell_weeks and self.small_cell_window <= self.period:
            raise ValueError(f"small_cell_weeks ({self.small_cell_weeks}) must span more than the alert period "
                             f"(current_window_hours = {self.current_window_hours:g}); 0 turns it off")
        return self

    @property
    def period(self) -> timedelta:
        return timedelta(hours=self.current_window_hours)

    @property
    def small_cell_window(self) -> timedelta:
        return timedelta(weeks=self.small_cell_weeks)

    @property
    def reach(self) -> timedelta:
        """How far before its window end a run reads judgments (the reference or the same weekdays)."""
        from verdict.drift.windows import SMALL_CELL_BASELINE

        gap = timedelta(hours=self.gap_hours)
        recent = self.period + gap + timedelta(days=self.baseline_days)
        return max(recent + timedelta(weeks=self.reference_weeks),
                   self.period + timedelta(weeks=self.seasonal_weeks if self.seasonality != "off" else 0),
                   (1 + SMALL_CELL_BASELINE) * self.small_cell_window + gap)

    def detector(self, alpha: float | None = None, small_cells: bool = False):
        """The DriftDetector of one run at level `alpha` (default: the whole `alpha`, as one lone run); with
        `small_cells` (the weekly decision, drift_runs.plan) it tests small cells over `small_cell_window`."""
        from verdict.drift import DriftDetector

        return DriftDetector(current_window=self.period,
                             baseline_window=timedelta(days=self.baseline_days), gap=timedelta(hours=self.gap_hours),
                             min_usable=self.min_usable, alpha=alpha or self.alpha, correction=self.correction,
                             coverage_alpha_share=self.coverage_alpha_share,
                             pass_rate_gate=self.pass_rate_gate_points / 100, delta_gate=self.delta_gate,
                             dimension_gates={k: g.share for k, g in self.dimension_gates.items()},
                             seasonality=self.seasonality, seasonal_weeks=self.seasonal_weeks,
                             seasonal_check_alpha=self.seasonal_check_alpha, reference_weeks=self.reference_weeks,
                             small_cell_window=self.small_cell_window if small_cells else timedelta(0))


def _http_url(url: str | None, refusal: str) -> str | None:
    if url is not None and not url.startswith(("http://", "https://")):
        raise ValueError(refusal)
    return url


class Alerts(_Section):
    webhook_url: str | None = None
    token_env: str | None = Field(None, pattern=r"^[A-Z_][A-Z0-9_]*$")
    max_attempts: int = Field(8, ge=1, le=100)
    timeout_seconds: float = Field(10, gt=0, le=600)

    @field_validator("webhook_url")
    @classmethod
    def _http(cls, url: str | None) -> str | None:
        return _http_url(url, "webhook_url must start with http:// or https://")

    def token(self) -> str | None:
        if self.token_env is None:
            return None
        value = os.environ.get(self.token_env)
        if not value:
            raise DaemonError("invalid_config", f"alerts.token_env: environment variable {self.token_env} is not set")
        return value


_HEADER_NAME = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$"  # an HTTP token (RFC 9110)


class EvaluationExport(_Section):
    """Each judgment as OTLP `gen_ai.evaluation.result` log records (service/evaluation_export.py); off while
    `endpoint` (an OTLP/HTTP logs URL, `.../v1/logs`) is unset. `headers` are sent as written; secret ones are
    named by an environment variable in `headers_env` (header -> variable), like alerts.token_env."""

    endpoint: str | None = None
    headers: dict[Annotated[str, Field(pattern=_HEADER_NAME)], str] = {}
    headers_env: dict[Annotated[str, Field(pattern=_HEADER_NAME)],
                      Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]*$")]] = {}
    timeout_seconds: float = Field(10, gt=0, le=600)
    batch_attempts: int = Field(200, ge=1, le=10_000)  # judgment attempts per request (each: a record per dimension)
    max_batches_per_run: int = Field(50, ge=1, le=MANY)

    @field_validator("endpoint")
    @classmethod
    def _http(cls, url: str | None) -> str | None:
        return _http_url(url, "endpoint must start with http:// or https:// (OTLP/HTTP, e.g. http://host:4318/v1/logs)")

    @field_validator("headers")
    @classmethod
    def _printable(cls, headers: dict[str, str]) -> dict[str, str]:
        if any(not v.isprintable() for v in headers.values()):
            raise ValueError("header values must be printable (no line breaks)")
        return headers

    def resolved_headers(self) -> dict[str, str]:
        """`headers` plus the `headers_env` values; an unset variable is invalid_config naming it."""
        resolved = dict(self.headers)
        for header, variable in self.headers_env.items():
            value = os.environ.get(variable)
            if not value:
                raise DaemonError("invalid_config",
                                  f"export.evaluations.headers_env.{header}: environment variable {variable} is not set")
            resolved[header] = value
        return resolved


class Export(_Section):
    evaluations: EvaluationExport = EvaluationExport()


class Sentinel(_Section):
    """The judge health check (verdict.sentinel) run before production judging; off without `file`."""

    file: Path | None = None
    minimum_examples: int = Field(30, ge=1, le=MANY)
    threshold: float = Field(0.8, ge=0, le=1)
    # The daemon reuses a healthy result this long; an unhealthy one is rechecked on the next tick.
    recheck_seconds: float = Field(3600, ge=0, le=366 * DAY_SECONDS)


class Review(_Section):
    """The human review queue (verdict_daemon.review): besides the items a judge cannot be trusted on,
    a seeded random share of confident judgments is queued as an audit sample."""

    audit_rate: float = Field(0.02, ge=0, le=1)
    seed: int = 0


class Probes(_Section):
    """Scheduled behaviour probes of a target model (verdict.probes, `verdict probes run`); off unless
    the section is present. Each run writes one artifact to `out_dir` (default `<data_dir>/probes`)."""

    suite: str = "default"  # a bundled suite name, or a suite YAML (relative to this file)
    target_model: str
    judge_model: str
    target_base_url: str | None = None
    judge_base_url: str | None = None
    schedule: Schedule = Schedule(cron="0 6 * * *")
    out_dir: Path | None = None
    min_pass_rate: float = Field(1.0, ge=0, le=1)
    min_category_pass_rate: float | None = Field(None, ge=0, le=1)

    def relative_to(self, base_dir: Path) -> Probes:
        suite_path = self.suite.endswith((".yaml", ".yml")) or "/" in self.suite
        update: dict[str, Any] = {"suite": str(base_dir / self.suite)} if suite_path and not Path(self.suite).is_absolute() else {}
        if self.out_dir is not None and not self.out_dir.is_absolute():
            update["out_dir"] = base_dir / self.out_dir
        return self.model_copy(update=update)


class Clustering(_Section):
    """`active`: the daemon's assign and drift jobs use the tenant's active cluster registry version
    (verdict-cluster, docs/clustering.md); `off`: explicit intent keys are the clusters."""

    registry_mode: Literal["off", "active"] = "off"


class Retention(_Section):
    days: int = Field(30, ge=0, le=36_600)  # 0 keeps everything
    compact_min_segments: int = Field(8, ge=2, le=MANY)
    delete_grace_seconds: float = Field(600, ge=0, le=86_400)  # replaced or expired files: hidden, then deleted
    # state.duckdb: a drift run's cells (`drift_cells`, one row per cell per run) are kept this many days after its
    # as_of; the cells of the runs a report shows (per evaluator its latest closing decision, early look and weekly
    # decision) are kept whatever their age. 0 keeps every run's cells.
    drift_cells_days: int = Field(7, ge=0, le=36_600)


class Lake(_Section):
    """Where the tenants' spans are, besides `data_dir`: the data dirs of other collectors and the object
    stores they ship to. The daemon reads the union, each segment once (collector.lake_union); state stays
    in `data_dir`."""

    dirs: tuple[Path, ...] = ()
    urls: tuple[str, ...] = ()  # s3://BUCKET/PREFIX (gs://, az://); credentials from the standard variables

    @field_validator("urls")
    @classmethod
    def _schemes(cls, urls: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(lake_url(u) for u in urls)


def lake_url(url: str) -> str:
    """An object-store lake URL, or ValueError saying what is expected."""
    from collector.objectstore import SCHEMES

    scheme, _, rest = url.partition("://")
    if scheme not in SCHEMES or not rest.split("/", 1)[0]:
        raise ValueError(f"{url!r}: expected " + ", ".join(f"{s}://BUCKET[/PREFIX]" for s in SCHEMES))
    return url


class Tenant(_Section):
    id: TenantId

    @field_validator("id", mode="before")
    @classmethod
    def _valid(cls, value: object) -> TenantId:
        try:
            return validate_tenant_id(value)
        except InvalidTenantError as exc:
            raise ValueError(str(exc)) from None


class DaemonConfig(_Section):
    data_dir: Path
    state_lock_timeout_seconds: float = Field(10, gt=0, le=3600)
    tenants: tuple[Tenant, ...] = Field(min_length=1)
    schedules: Schedules = Schedules()
    sampling: Sampling = Sampling()
    conversations: Conversations = Conversations()
    judging: Judging = Judging()
    evaluators: tuple[EvaluatorConfig, ...] = Field(min_length=1)
    imported_evaluations: tuple[ImportedEvaluation, ...] = ()
    drift: Drift = Drift()
    alerts: Alerts = Alerts()
    retention: Retention = Retention()
    sentinel: Sentinel = Sentinel()
    review: Review = Review()
    clustering: Clustering = Clustering()
    probes: Probes | None = None
    lake: Lake = Lake()
    export: Export = Export()

    @model_validator(mode="after")
    def _unique(self) -> DaemonConfig:
        evaluators = [e.name for e in self.evaluators] + [e.name for e in self.imported_evaluations]
        for label, names in (("tenants", [str(t.id) for t in self.tenants]), ("evaluators", evaluators)):
            duplicated = sorted({n for n in names if names.count(n) > 1})
            if duplicated:
                raise ValueError(f"{label}: duplicate name(s) {duplicated}")
        asking = [e.name for e in self.evaluators if e.trajectory]
        if asking and self.conversations.trajectory_steps == 0:
            raise ValueError(f"evaluators {asking} ask for trajectories (trajectory = true) but "
                             "conversations.trajectory_steps is 0")
        return self


def _path(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def parse_config(data: dict, base_dir: Path | None = None) -> DaemonConfig:
    """Validate a parsed TOML document; relative paths resolve against `base_dir` (the file's directory)."""
    try:
        config = DaemonConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors()[:5]:
            reason = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                reason = "unknown field" + (" (put secrets in environment variables, not in the file)"
                                            if _looks_secret(str(error["loc"][-1])) else "")
            problems.append(f"{_path(error['loc'])}: {reason}")
        raise DaemonError("invalid_config", "; ".join(problems)) from None
    if base_dir is None:
        return config
    evaluators = tuple(e.model_copy(update={"rubric_file": base_dir / e.rubric_file})
                       if e.rubric_file is not None and not e.rubric_file.is_absolute() else e
                       for e in config.evaluators)
    sentinel = config.sentinel
    if sentinel.file is not None and not sentinel.file.is_absolute():
        sentinel = sentinel.model_copy(update={"file": base_dir / sentinel.file})
    lake = config.lake.model_copy(update={"dirs": tuple(base_dir / d for d in config.lake.dirs)})
    return config.model_copy(update={"data_dir": base_dir / config.data_dir, "evaluators": evaluators,
                                     "sentinel": sentinel, "lake": lake,
                                     "probes": config.probes and config.probes.relative_to(base_dir)})


def _looks_secret(name: str) -> bool:
    return any(word in name.lower() for word in ("key", "secret", "token", "password"))


def load_config(path: Path) -> DaemonConfig:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DaemonError("invalid_config", f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DaemonError("invalid_config", f"cannot read config file {path}: {exc.__class__.__name__}") from None
    except tomllib.TOMLDecodeError as exc:
        raise DaemonError("invalid_config", f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested tables and arrays recursively
        raise DaemonError("invalid_config", f"{path}: values are nested too deeply") from None
    try:
        return parse_config(data, Path(path).resolve().parent)
    except RecursionError:
        raise DaemonError("invalid_config", f"{path}: values are nested too deeply") from None
