"""The frozen clustering evaluation set, as the tests see it (independent of quality_gate.py).

80 MT-Bench questions (FastChat, Apache-2.0; verdict_daemon/data/README.md), first turn of each,
labelled by category: 8 categories × 10 questions, ids 81-160. Read straight from the file with
the standard library so the product loader is checked against it, not against itself.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

PATH = Path(__file__).resolve().parents[2] / "verdict_daemon" / "data" / "mt_bench_questions.jsonl"
CATEGORIES = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")
QUESTION_IDS = tuple(range(81, 161))


def sha256() -> str:
    return hashlib.sha256(PATH.read_bytes()).hexdigest()


def load() -> list[tuple[int, str, str]]:
    """(question_id, category, first turn) in file order."""
    with PATH.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [(row["question_id"], row["category"], row["turns"][0]) for row in rows]
