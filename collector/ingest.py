"""One export, whatever the transport: authenticate -> admit -> decode -> queue -> wait until durable.

HTTP and gRPC both call `IngestService.export` (from worker threads); each maps the outcome
and the two exception types (RequestError: the request is wrong; Overloaded: try again later)
to its own status codes.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from collector.auth import TokenStore, export_token
from collector.columns import record_batch
from collector.decoding import Decoded, DecoderPool, EncodedPartition
from collector.otlp import RequestError
from collector.stats import Stats
from collector.writer import Overloaded, SegmentWriter
from verdict.tenancy import LOCAL_TENANT

log = logging.getLogger("verdict.collector")


@dataclass(frozen=True)
class ExportOutcome:
    kind: str
    rejected: int
    message: str


class Reservation:
    """Bytes of the in-flight budget held by one request (see IngestService.admitted)."""

    def __init__(self, service: IngestService):
        self._service = service
        self.held = 0

    def grow(self, size: int) -> None:
        """Hold `size` more bytes (a body chunk that just arrived), or raise Overloaded."""
        self._service._reserve(self, size)


def _to_arrow(partitions: list[EncodedPartition]) -> list:
    return [(p.table, p.tenant, p.date, record_batch(p.columns, p.table)) for p in partitions]


class IngestService:
    def __init__(
        self, tokens: TokenStore | None, pool: DecoderPool, writer: SegmentWriter, stats: Stats, max_inflight_bytes: int
    ):
        self._tokens = tokens
        self._pool = pool
        # Bodies being received or decoded are held in memory too: they get their own budget.
        self._max_inflight = max_inflight_bytes
        self._inflight = 0
        self._inflight_lock = threading.Lock()
        self._writer = writer
        self.stats = stats
        self._logged: dict[str, set[str]] = {}  # what was logged once per sender: topic -> senders

    def authenticate(self, authorization: str | None) -> tuple[str, bool]:
        """(tenant, authenticated). Without a token file everything is the local tenant."""
        if self._tokens is None:
            return LOCAL_TENANT, False
        tenant = self._tokens.tenant_for(export_token(authorization))
        if tenant is None:
            self.stats.add(requests_unauthenticated=1)
            raise RequestError(401, "missing or invalid bearer token")
        return tenant, True

    @contextlib.contextmanager
    def admitted(self) -> Iterator[Reservation]:
        """One request's share of the in-flight budget; raise Overloaded (429/503) when refused.

        The share grows with the bytes actually received (`Reservation.grow`), never from a
        declared length, so a client announcing a large body and sending nothing holds nothing.
        """
        self.stats.add(requests=1)
        self._writer.check_admission()
        reservation = Reservation(self)
        try:
            yield reservation
        finally:
            with self._inflight_lock:
                self._inflight -= reservation.held

    def _reserve(self, reservation: Reservation, size: int) -> None:
        with self._inflight_lock:
            # A request alone is always admitted, so a single body up to the size limit can pass.
            others = self._inflight - reservation.held
            if others and self._inflight + size > self._max_inflight:
                self.stats.add(refused_overload=1)
                raise Overloaded(429, "too many request bodies in flight; retry later", 1)
            self._inflight += size
            reservation.held += size

    def export(
        self, payload: bytes, content_type: str | None, content_encoding: str | None, tenant: str, authenticated: bool,
        signal: str, sender: str,
    ) -> ExportOutcome:
        """Call after authenticate(), inside admitted(); returns once the accepted spans (or log records) are durable.

        `sender` (peer address and user agent) names the client in what is logged once per sender."""
        with self._writer.arriving():
            decoded = self._decode(payload, content_type, content_encoding, tenant, authenticated, signal)
            items = "logs" if signal == "logs" else "spans"
            self.stats.add(**{f"{items}_received": decoded.accepted, f"{items}_rejected": decoded.rejected,
                              f"{items}_outside_retention": decoded.outside_retention})
            if signal == "traces":
                self.stats.add_spans_by_dialect(decoded.dialects, decoded.unrecognised)
                self._dialects_seen(decoded, sender)
            if decoded.ignored_claims:
                self._claims_ignored(decoded.ignored_claims, items, sender, tenant)
            if decoded.outside_retention and self._first_time("retention", sender):
                log.warning("rejecting %s older than --retention-days from %s (tenant %s): retention would delete "
                            "them at its next run; refused through partial_success (logged once per sender; "
                            "counted in /stats %s_outside_retention)", items, sender, tenant, items)
            try:  # wraps the workers' buffers (no copy, no allocation): fine in any request thread
                batches = _to_arrow(decoded.partitions)
            except Exception as exc:  # a value flatten() let through that Arrow cannot hold: a bug, not a 500 loop
                log.exception("could not convert decoded spans to Arrow")
                self.stats.add(requests_invalid=1)
                raise RequestError(
                    400, f"spans could not be stored ({type(exc).__name__}); see the collector log"
                ) from None
            durable = self._writer.submit(batches, decoded.accepted)
        durable.result()
        return ExportOutcome(decoded.kind, decoded.rejected, decoded.message)

    def _decode(self, payload, content_type, content_encoding, tenant, authenticated, signal) -> Decoded:
        try:
            return self._pool.submit(payload, content_type, content_encoding, tenant, authenticated, signal).result()
        except RequestError:
            self.stats.add(requests_invalid=1)
            raise
        except BrokenProcessPool:
            raise Overloaded(503, "decoder restarting; retry", 1) from None
        except RecursionError:
            self.stats.add(requests_invalid=1)
            raise RequestError(400, "request nests values too deeply") from None
        except Exception as exc:  # a decoder bug must not become a 500 loop for the client
            log.exception("unexpected decode failure")
            self.stats.add(requests_invalid=1)
            raise RequestError(400, f"request could not be decoded ({type(exc).__name__})") from None

    def _claims_ignored(self, claims: dict[str, int], items: str, sender: str, tenant: str) -> None:
        """Items claiming a tenant a tokenless collector does not honour: counted, logged once per sender."""
        self.stats.add(**{f"{items}_claim_ignored": sum(claims.values())})
        if self._first_time("claims", sender):
            named = ", ".join(repr(c[:64]) for c in sorted(claims)[:3])
            log.warning("%s from %s claim tenant %s, but this collector has no --tokens: they land in %s (give "
                        "--tokens to map a token to the tenant, or --allow-claimed-tenant to honour claims; logged "
                        "once per sender; counted in /stats %s_claim_ignored)", items, sender, named, tenant, items)

    def _dialects_seen(self, decoded: Decoded, sender: str) -> None:
        """Log once a sender none of whose spans so far was in a dialect this collector recognises: its calls
        give no llm_calls rows, and the scope names say which instrumentation to ask a dialect for."""
        if decoded.dialects:
            self._first_time("recognised", sender)  # marks the sender as understood
            return
        if not decoded.unrecognised or self._seen("recognised", sender) or not self._first_time("unrecognised", sender):
            return
        scopes = sorted(decoded.unrecognised.items(), key=lambda item: -item[1])
        named = ", ".join(f"{name[:80]!r} ({n} spans)" for name, n in scopes[:5])
        log.warning("no span from %s so far is in a GenAI dialect this collector recognises (instrumentation scopes: "
                    "%s): they are stored, but give no llm_calls rows (logged once per sender; counted per scope in "
                    "/stats unrecognised_scopes; to ask for a dialect, see docs/tracing.md, \"Asking for a new "
                    "dialect\")", sender, named)

    def _seen(self, topic: str, sender: str) -> bool:
        with self._inflight_lock:
            return sender in self._logged.get(topic, ())

    def _first_time(self, topic: str, sender: str) -> bool:
        """Whether `topic` is to be logged for `sender` now: once per sender, for at most 1024 senders."""
        with self._inflight_lock:
            senders = self._logged.setdefault(topic, set())
            first = sender not in senders and len(senders) < 1024
            if first:
                senders.add(sender)
        return first

    def refuse_metrics(self, sender: str) -> None:
        """Metrics are not stored: count each refusal, log once per sender (bounded)."""
        self.stats.add(metrics_refused=1)
        if self._first_time("metrics", sender):
            log.warning("refusing OTLP metrics from %s: this collector stores traces and logs only "
                        "(logged once per sender; counted in /stats metrics_refused)", sender)

    def inflight_bytes(self) -> int:
        return self._inflight
