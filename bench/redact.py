"""Redaction throughput: `python bench/redact.py [--mb 2] [--repeat 7]`.

Three corpora, all generated deterministically here (no downloads):
- clean prose: support-chat style English with ordinary numbers, prices, dates, times, versions,
  code and ids, and no secret at all (every byte still has to be scanned);
- secrets: the same prose with one secret or PII item (rotating over every detector) about
  every 200 bytes;
- GenAI messages: `gen_ai.input.messages` / `gen_ai.output.messages` JSON strings in OTel GenAI
  semconv shape, already redacted by the SDK (clean text plus placeholders such as <EMAIL>),
  which the collector re-redacts server-side for every span: ~290 and ~1 KB per message, and the
  tiny strings (a role, a model name) the SDK redacts on every call;
- span content attributes: the mappings the collector passes to `value()` per span (attribute key ->
  value), measured with mapping keys remembered (the Redactor) and redacted on every call (the
  Redactor before the key cache), side by side in one run: microseconds per call and the ratio.
The first two are measured as one large document and as 1 KB messages (the SDK's typical call): the
median of `--repeat` runs of process CPU time (the machine is shared, and CPU time is what the
redaction costs; wall time is printed alongside); the messages in microseconds per call. Targets (issue 3): >= 25 MB/s clean,
>= 10 MB/s with secrets; a peer does 1.2 MB/s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from verdict.redact import Redactor

TARGETS = {"clean prose": 25.0, "secrets every ~200 B": 10.0}

_PROSE = [
    "Thanks for reaching out about the billing dashboard.",
    "The export finished in 3.5 seconds for 10,000 rows, which is within our budget.",
    "We shipped version 2.10.1 on 2024-05-01 at 12:34:56 UTC and rolled back at 13:02.",
    "Your order #48213 totals $1,299.99 including a 15% discount.",
    "In C++ you would write std::vector<int> v; and iterate with for (auto& x : v).",
    "The commit e83c5163316f89bfbde7d9ab23ca2e25604af290 fixed the regression in the parser.",
    "Request id 123e4567-e89b-12d3-a456-426614174000 was retried twice before succeeding.",
    "Please update the SDK to 1.2.3.4 or later; older builds leak file handles.",
    "The meeting moved to Tuesday; the agenda covers retention, latency and the Q3 roadmap.",
    "A key takeaway: keep the prompt short and pass the context explicitly to the model.",
    "ISBN 978-3-16-148410-0 is the reference edition of the style guide we follow.",
    "Latency p50 dropped from 412 ms to 268 ms after enabling the cache.",
    "She asked whether the refund would arrive before the 15th of the month.",
    "Our tokenizer splits 'unbelievable' into three pieces, which surprised the team.",
    "Set the timeout to 30 seconds and the retry budget to 3 attempts per minute.",
    "The dashboard shows 98.6% uptime over the last 90 days across 12 regions.",
    "I understand your frustration, and I am sorry the delivery took longer than promised.",
    "Could you tell me which browser you are using and whether the problem started recently?",
    "The summary below lists the main risks, the owners and the proposed mitigations.",
    "Most customers prefer the monthly plan, but annual billing saves roughly two months.",
    "When the model is unsure, it should say so and ask a clarifying question instead.",
    "Here is a short explanation of how the retry policy interacts with rate limits.",
    "The new onboarding flow reduced drop-off, especially on mobile devices.",
    "We recommend rotating credentials regularly and storing them in a secrets manager.",
    "If the issue persists, clear the cache, sign out, and sign back in.",
    "The report compares last week's answers with this week's and highlights regressions.",
    "Our support team is available from Monday to Friday, nine to five Central European Time.",
    "The translation keeps the original tone while adapting idioms for a French audience.",
    "Each judge scores helpfulness, correctness and tone on a five-point scale.",
    "Please note that the discount cannot be combined with other promotions.",
    "The assistant drafted three alternative subject lines for the newsletter.",
    "According to the policy, refunds are processed within ten business days.",
    "The outline has an introduction, two case studies and a short conclusion.",
    "He wanted to know why the invoice listed the same item twice.",
    "The warehouse in Rotterdam handles most of the European shipments.",
    "Let me know if you would like a more detailed breakdown by region or product line.",
]

_SECRETS = [
    "contact jane.doe+billing@example.co.uk",
    "call me at (415) 555-0134",
    "my card is 4111 1111 1111 1111",
    "SSN 078-05-1120",
    "IBAN DE89 3704 0044 0532 0130 00",
    "from 203.0.113.42",
    "via 2001:db8:85a3::8a2e:370:7334",
    "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "Authorization: Bearer 8f14e45fceea167a5a36dedd4bea2543",
    "postgres://app:s3cr3t-pass@db.internal:5432/orders",
    "OPENAI_API_KEY=sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab",
    "key AKIAIOSFODNN7EXAMPLE",
    "password: hunter2!",
    '{"client_secret": "c2VjcmV0LXZhbHVlLTEyMw"}',
    "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
    "+44 20 7946 0958",
    "key -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
]


_MESSAGE_TEXTS = [
    "My invoice for last month shows a charge I do not recognise, can you explain the line items "
    "and tell me whether I am eligible for a refund under the annual plan?",
    "I forgot the password for the admin console and the reset email never arrives; my address "
    "is <EMAIL> and the account was created by a colleague who has since left.",
    "The charge of 49.00 is the prorated upgrade from the starter plan on the 12th. Annual plans "
    "are refundable within 30 days, so you are eligible; call <PHONE> if it does not arrive.",
    "I have sent a new reset link to the address on file. If it does not arrive within ten "
    "minutes, check the spam folder or ask another admin to reset it from Settings > Members.",
]


def genai_messages(count: int, size: int, seed: int = 11) -> list[str]:
    """`count` distinct message-attribute JSON strings of about `size` characters each."""
    rng = random.Random(seed)
    messages = []
    for _ in range(count):
        text = f"Ticket {rng.randint(10_000_000, 99_999_999)}: {rng.choice(_MESSAGE_TEXTS)}"
        while len(text) < size - 72:
            text += " " + rng.choice(_PROSE + _MESSAGE_TEXTS)
        role = rng.choice(("user", "assistant"))
        message = {"role": role, "parts": [{"type": "text", "content": text[: size - 72]}]}
        if role == "assistant":
            message["finish_reason"] = "stop"
        messages.append(json.dumps([message]))
    return messages


def microseconds_per_call(call: Callable[[Any], object], inputs: Sequence[Any], repeat: int) -> float:
    """Median over `repeat` runs of the CPU time per `call(input)` (`text()`, `value()`), in microseconds."""
    runs = []
    for _ in range(repeat):
        c0 = time.process_time()
        for item in inputs:
            call(item)
        runs.append(time.process_time() - c0)
    return statistics.median(runs) / len(inputs) * 1e6


class _EveryKey(Redactor):
    """The baseline: every mapping key redacted on every call, as before keys were remembered."""

    __slots__ = ()

    def _key(self, key: str) -> str:
        return self.text(key)


_ATTRIBUTE_KEYS = (
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.prompt", "gen_ai.completion",
    "llm.input_messages", "llm.output_messages",
)  # fmt: skip


def span_contents(count: int, keys: int, size: int) -> list[dict[str, str]]:
    """`count` content mappings of `keys` GenAI attribute keys each, values message JSON of ~`size` chars
    (`size` 0: a one-word value, so the keys' cost shows alone)."""
    values = genai_messages(count * keys, size) if size else ["ok"] * (count * keys)
    return [dict(zip(_ATTRIBUTE_KEYS[:keys], values[n * keys : (n + 1) * keys], strict=True)) for n in range(count)]


def build(size: int, with_secrets: bool, seed: int = 7) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    length = since_secret = secret_index = 0
    while length < size:
        sentence = rng.choice(_PROSE)
        if with_secrets and since_secret >= 160:
            sentence = f"{sentence[:-1]}, {_SECRETS[secret_index % len(_SECRETS)]}."
            secret_index += 1
            since_secret = 0
        parts.append(sentence)
        length += len(sentence) + 1
        since_secret += len(sentence) + 1
    return " ".join(parts)[:size]


def throughput(redactor: Redactor, texts: list[str], repeat: int) -> tuple[float, float]:
    """(MB/s of CPU time, MB/s of wall time), medians over `repeat` runs."""
    total = sum(len(t.encode()) for t in texts)
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        for t in texts:
            redactor.text(t)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return total / statistics.median(cpu) / 1e6, total / statistics.median(wall) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2.0, help="corpus size in MB")
    parser.add_argument("--repeat", type=int, default=7, help="runs per figure (median)")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    redactor = Redactor()
    print(f"verdict.redact throughput, median of {args.repeat} runs, {args.mb:g} MB per corpus")
    print(f"{'corpus':<24}{'shape':<16}{'MB/s cpu':>9}{'(wall)':>8}{'target':>8}{'ratio':>8}")
    for name, with_secrets in (("clean prose", False), ("secrets every ~200 B", True)):
        doc = build(size, with_secrets)
        messages = [doc[i : i + 1000] for i in range(0, len(doc), 1000)]
        for shape, texts in (("one document", [doc]), ("1 KB messages", messages)):
            cpu, wall = throughput(redactor, texts, args.repeat)
            target = TARGETS[name]
            print(
                f"{name:<24}{shape:<16}{cpu:>9.1f}{wall:>8.1f}{target:>8.0f}{cpu / target:>7.2f}x"
            )
        if with_secrets:
            findings = len(redactor.find(doc))
            print(f"  ({findings} findings, one per {len(doc) // findings} bytes)")
    print()
    print(f"{'GenAI messages, already redacted':<40}{'chars':>8}{'µs/call cpu':>14}")
    calls = max(200, int(args.mb * 2000))
    for name, texts in (
        ("message JSON ~290 chars", genai_messages(calls, 290)),
        ("message JSON ~1 KB", genai_messages(calls // 4, 1000)),
        ('tiny string "user"', ["user"] * calls * 10),
    ):
        chars = statistics.median(len(t) for t in texts)
        us = microseconds_per_call(redactor.text, texts, args.repeat)
        print(f"{name:<40}{chars:>8.0f}{us:>14.2f}")
    print()
    print(f"{'span content attributes, value()':<40}{'keys':>6}{'µs/call cpu: every key':>24}{'remembered':>12}"
          f"{'ratio':>8}")
    for name, keys, size in (("message JSON ~290 chars", 3, 290), ("one-word values", 10, 0)):
        values = span_contents(calls // 4, keys, size)
        before, after = (microseconds_per_call(r.value, values, args.repeat) for r in (_EveryKey(), Redactor()))
        print(f"{name:<40}{keys:>6}{before:>24.2f}{after:>12.2f}{after / before:>7.2f}x")


if __name__ == "__main__":
    main()
