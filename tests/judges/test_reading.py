"""Reading rules (docs/judges.md, "Reading rules"): no extractor, judge or pairwise comparison produces a result
its reply does not state. Replies are generated from statements of a preference, a tie, a refusal, a range and
a negation; each result is checked against what the generated reply states."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdict.extract import RegexExtractor, read_field
from verdict.graph import Pipeline
from verdict.graph.errors import ExtractionError
from verdict.judges import (
    DEFAULT_RUBRIC,
    Judge,
    JudgeUnit,
    JudgmentStatus,
    PairwiseJudge,
    PairwiseStatus,
)
from verdict.judges.judge import Verdict, check_rationale
from verdict.judges.pairwise import read_marker
from verdict.models.scripted import ScriptedModel

LETTERS = st.sampled_from("ABC")

# --- pairwise -------------------------------------------------------------------------------------------
# Prose that mentions letters without being a verdict line: what real models write around (or instead of) one.
PROSE = st.one_of(
    LETTERS.map(lambda x: f"Assistant {x} is better."),
    LETTERS.map(lambda x: f"I prefer {x} because it is more complete."),
    LETTERS.map(lambda x: f"Verdict: {x} is more accurate."),
    st.just("Verdict: A tie."), st.just("Both are equally good; it's a tie."), st.just("It's a tie between A and B."),
    st.just("I cannot decide between them."), st.just("As an AI, I won't choose."),
    st.just("In my verdict, A is worse than B."), st.just("Somewhere between A and B."),
    st.just("Verdict: A is incorrect; B is correct."), st.just("Assistant B is right. Assistant [A] made a factual error."),
    LETTERS.map(lambda x: f"{x} is not better."), LETTERS.map(lambda x: f"Not {x}."),
    st.just("Neither A nor B answers it."), LETTERS.map(lambda x: f"I would not pick {x}."),
)
EMPHASIS = st.sampled_from(["{}", "**{}**", "*{}*", "`{}`"])
LETTER_LINE = st.tuples(st.sampled_from(["{}", "[{}]", "Verdict: {}", "Final verdict: {}", "Verdict: Assistant {}",
                                         "After comparing them: [{}]", "{}."]), EMPHASIS)


def prose(parts: list[str], separators: list[str]) -> str:
    return "".join(p + s for p, s in zip(parts, separators, strict=False)) + "".join(parts[len(separators):])


@given(st.lists(PROSE, min_size=1, max_size=5), st.lists(st.sampled_from([" ", "\n", "\n\n"]), max_size=5))
def test_prose_that_only_mentions_letters_is_never_a_verdict(parts, separators):
    with pytest.raises(ExtractionError):
        read_marker(prose(parts, separators))


@given(st.lists(PROSE, max_size=4), LETTERS, LETTER_LINE)
def test_a_last_line_that_is_the_letter_alone_is_that_letter(parts, letter, form):
    line, emphasis = form
    assert read_marker("\n".join([*parts, emphasis.format(line.format(letter))])) == letter


@given(st.lists(PROSE, max_size=4), LETTERS, st.integers(0, 4))
def test_a_complete_marker_is_its_letter_unless_negated(parts, letter, position):
    parts.insert(min(position, len(parts)), f"[[{letter}]]")
    text = " ".join(parts)
    before = text[: text.index("[[")]
    if re.search(r"\b(?:not|no|never|nor|neither)\W*$|n't\W*$", before, re.IGNORECASE):
        with pytest.raises(ExtractionError, match="negated"):
            read_marker(text)
    else:
        assert read_marker(text) == letter


@given(st.lists(st.one_of(PROSE, LETTERS, LETTERS.map("[[{}]]".format), LETTERS.map("Verdict: {}".format),
                          st.sampled_from(["[[", "]]", "[", "]", "not", "**"])), max_size=6),
       st.lists(st.sampled_from([" ", "\n"]), max_size=6))
def test_whatever_is_read_is_stated_as_a_marker_or_a_last_line(parts, separators):
    """Soundness over mixed replies: a letter read is the reply's only complete marker, or its last line alone."""
    text = prose(parts, separators)
    try:
        letter = read_marker(text)
    except ExtractionError:
        return
    lines = [line for line in text.splitlines() if line.strip()]
    if "[[" in text:
        assert text.count(f"[[{letter}]]") == 1 and text.count("[[") == 1
    else:
        assert re.sub(r"[*`\s.\]]", "", lines[-1]).endswith(letter)


def test_an_unreadable_round_keeps_the_reply():
    judge = PairwiseJudge(ScriptedModel(["Verdict: A tie.", "[[C]]"]), retries=0)
    judgment = judge.compare("q", "one", "two")
    first = judgment.rounds[0]
    assert judgment.status is PairwiseStatus.INVALID and judgment.verdict is None
    assert first.reply == "Verdict: A tie." and "letter alone" in str(first.error)


# --- integers on a scale ----------------------------------------------------------------------------------
SCALE_FIELD = JudgeUnit().ResponseSchema  # score: an integer from 1 to 5
FIRST_INT = re.compile(RegexExtractor.FIRST_INT)
VALUE = st.integers(1, 5)
# (text, values the statement states, whether it negates one)
STATEMENT = st.one_of(
    VALUE.map(lambda v: (f"I give it {v}.", {v}, False)),
    VALUE.map(lambda v: (f"Score: {v}", {v}, False)),
    VALUE.map(lambda v: (f"{v}/5", {v}, False)),
    VALUE.map(lambda v: (f"{v} out of 5", {v}, False)),
    st.tuples(VALUE, VALUE).map(lambda p: (f"between {p[0]} and {p[1]}", {*p}, False)),
    # "1-5" is the scale's two ends (like "1 to 5"), not a statement of either
    st.tuples(VALUE, VALUE).map(lambda p: (f"{p[0]}-{p[1]}", set() if p == (1, 5) else {*p}, False)),
    VALUE.map(lambda v: (f"It does not deserve a {v}", {v}, True)),
    VALUE.map(lambda v: (f"I wouldn't give it {v}", {v}, True)),
    st.sampled_from([("On a scale of 1 to 5", set(), False), ("I cannot score this", set(), False),
                     ("The answer is fine", set(), False), ("It has 12 errors", set(), False),
                     ("About 4.5", set(), False)]),
)


@given(st.lists(STATEMENT, min_size=1, max_size=4))
def test_an_integer_is_read_only_when_the_reply_states_exactly_one(statements):
    text = ". ".join(s for s, _, _ in statements)
    stated = set().union(*(values for _, values, _ in statements))
    negates = any(negated for _, _, negated in statements)
    if len(stated) == 1 and not negates:
        assert read_field(SCALE_FIELD, "score", FIRST_INT, text) == stated.pop()
    else:
        with pytest.raises(ExtractionError):
            read_field(SCALE_FIELD, "score", FIRST_INT, text)


@pytest.mark.parametrize(("reply", "result"), [
    ("On a scale of 1 to 5, I give it 4.", 4),
    ("I'd give it 3/5", 3),
    ("4, maybe 5", "ambiguous"),
    ("I would not give it a 5.", "negates 5"),
    ("12", "not on the scale"),
])
def test_the_issue_replies(reply, result):
    unit = JudgeUnit().extract(RegexExtractor(RegexExtractor.FIRST_INT)).via(ScriptedModel([reply]), retries=0)
    output = (Pipeline() >> unit).run({"a": 1}).output
    if isinstance(result, int):
        assert output.score == result
    else:
        assert result in output.message


# --- verdict and rationale ------------------------------------------------------------------------------------
@given(st.sampled_from(list(Verdict)), st.sampled_from(list(Verdict)),
       st.sampled_from(["{}", "{}.", '"{}"', " {} ", "{}!"]), st.sampled_from([str.upper, str.lower, str.title]))
def test_a_rationale_that_is_only_another_verdict_is_refused(verdict, label, form, case):
    rationale = form.format(case(label.value))
    if label is verdict:
        check_rationale("d", verdict, rationale)
    else:
        with pytest.raises(ExtractionError, match="another verdict"):
            check_rationale("d", verdict, rationale)


@settings(max_examples=30)
@given(st.sampled_from(list(Verdict)), st.sampled_from(list(Verdict)), st.booleans())
def test_a_judge_states_a_verdict_only_when_its_rationale_does_not_contradict_it(verdict, label, per_dimension):
    names = DEFAULT_RUBRIC.dimension_names
    grade = {"verdict": verdict.value, "rationale": label.value, "evidence": []}
    reply = json.dumps(grade if per_dimension else {name: grade for name in names})
    judgment = Judge(ScriptedModel([reply]), per_dimension=per_dimension, retries=0).grade("An answer.",
                                                                                          context="ctx")
    if label is verdict:
        assert judgment.status is JudgmentStatus.VALID and set(judgment.verdicts.values()) == {verdict}
    else:
        assert judgment.status is JudgmentStatus.ERROR and "another verdict" in str(judgment.error)


@settings(max_examples=30)
@given(st.sampled_from(list(Verdict)), st.sampled_from(list(Verdict)))
def test_a_reply_stating_a_key_twice_is_refused_whatever_the_values(first, second):
    reply = f'{{"verdict": "{first.value}", "rationale": "Checked.", "verdict": "{second.value}", "evidence": []}}'
    judgment = Judge(ScriptedModel([reply]), per_dimension=True, retries=0).grade("An answer.", context="ctx")
    assert judgment.status is JudgmentStatus.ERROR and "repeats the key(s) ['verdict']" in str(judgment.error)
