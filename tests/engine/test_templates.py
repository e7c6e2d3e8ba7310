"""Prompt templates: sections, formatting, namespaces (source/previous/input/unit), restricted evaluation."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verdict.graph import (
    ConfigurationError,
    Layer,
    Pipeline,
    Prompt,
    PromptRegistry,
    Schema,
    TemplateError,
    Unit,
)
from verdict.graph.template import compile_template
from verdict.models.scripted import ScriptedModel
from verdict.scale import DiscreteScale, Scale


class Explained(Schema):
    explanation: str
    score: Scale = DiscreteScale((1, 5))


class Text(Schema):
    text: str


class ExplainUnit(Unit):
    ResponseSchema = Explained


class WriteUnit(Unit):
    ResponseSchema = Text


def render(template: str, **namespace):
    full = {"source": None, "previous": None, "input": None, "unit": None, **namespace}
    return [(m.role, m.content) for m in compile_template(template).render(full)]


def test_sections_and_stripping():
    messages = render("""
        @system
            You judge.

        @user
        Question: {source}

          Answer now.
        @assistant
        Sure
    """, source="Q?")
    assert messages == [("system", "You judge."), ("user", "Question: Q?\n\nAnswer now."),
                        ("assistant", "Sure")]


def test_user_is_implicit_and_no_format_keeps_layout():
    assert render("hello") == [("user", "hello")]
    assert render("@no_format\n\n  indented\n") == [("user", "\n  indented\n")]


def test_literal_braces_and_expression_with_nested_braces():
    template = 'Rules:\n{"\n".join(f"{i+1}. {x}" for i, x in enumerate(source))}\n{{"json": true}}'
    assert render(template, source=["be kind", "be brief"]) == [
        ("user", 'Rules:\n1. be kind\n2. be brief\n{"json": true}')]


def test_interpolated_data_is_never_evaluated():
    sneaky = "{source.__class__.__mro__} {len(previous)}"
    assert render("{source}", source=sneaky) == [("user", sneaky)]


@pytest.mark.parametrize("expression, reason", [
    ("__import__('os').system('true')", "name '__import__' is not allowed"),
    ("source.__class__", "attribute '__class__' is not allowed"),
    ("open('/etc/passwd')", "unknown name 'open'"),
    ("(lambda: 1)()", "Lambda is not allowed"),
    ("'{0.__class__}'.format(source)", "attribute 'format' is not allowed"),
    ("9 ** 9 ** 9", "Pow is not allowed"),
    ("secret", "unknown name 'secret'"),
    ("[x := 1]", "NamedExpr is not allowed"),
    ("[g.gi_frame.f_back for g in [(x for x in source)]]", "attribute 'f_back' is not allowed"),
    ("(x for x in source).gi_code", "attribute 'gi_code' is not allowed"),
    ("str.mro()", "attribute 'mro' is not allowed"),
    ("str.format_map('{0}', source)", "attribute 'format_map' is not allowed"),
    ("f'{source.__dict__!r}'", "attribute '__dict__' is not allowed"),
    ("f'{source:{source.__doc__}}'", "attribute '__doc__' is not allowed"),
    ("1 << 10 ** 9", "LShift is not allowed"),
    ("getattr(source, '__class__')", "unknown name 'getattr'"),
    ("vars()", "unknown name 'vars'"),
    # A comprehension variable named after the scope's builtins would hand out the builtins dict itself.
    ("[1 for __builtins__ in []] or __builtins__", "name '__builtins__' is not allowed"),
    ("[x for __class__ in source]", "name '__class__' is not allowed"),
    # A comprehension variable is in scope only inside its comprehension.
    ("[x for x in source] + [x]", "unknown name 'x'"),
    ("[y for y in [x for x in source] if x]", "unknown name 'x'"),
])
def test_restricted_evaluation_refuses(expression, reason):
    with pytest.raises(TemplateError, match=reason):
        compile_template("{" + expression + "}")


def test_caller_locals_are_invisible():
    secret = "hunter2"  # noqa: F841 - a template must not see it
    with pytest.raises(TemplateError, match="unknown name 'secret'"):
        compile_template("{secret}")


def test_only_safe_builtins_at_run_time():
    # `type` is not a safe builtin even when reached through a comprehension variable's name.
    with pytest.raises(TemplateError, match="unknown name 'type'"):
        compile_template("{[type(x) for x in source]}")
    assert render("{sorted(source)[0]} {max(len(s) for s in source)}", source=["b", "aa"]) == [("user", "aa 2")]


def test_unbalanced_template_errors():
    with pytest.raises(TemplateError, match="unmatched"):
        compile_template("oops }")
    with pytest.raises(TemplateError, match="unterminated or invalid"):
        compile_template("{source.")


def _explain(name: str = "judge") -> ExplainUnit:
    return ExplainUnit(name=name).prompt("judge {source.q}")


def test_previous_by_single_dependency_short_name_and_position():
    judges = Layer(_explain(), 3)
    summary = WriteUnit().prompt("""
        one={previous.judge[0].score} two={previous.judge[1].explanation} three={previous.judge[2].explanation}
        all={[p.score for p in previous]} count={len(previous.judge)}
    """)
    replies = iter(['{"explanation": "first", "score": 1}', '{"explanation": "second", "score": 2}',
                    '{"explanation": "third", "score": 3}', '{"text": "done"}'])
    model = ScriptedModel(lambda request: next(replies), record=True)
    # max_workers=1: the judges run in definition order, so reply i goes to judge i
    row = (Pipeline() >> judges >> summary).via(model).run({"q": "Q"}, max_workers=1)
    assert row.ok, row.error
    assert model.requests[-1].messages[0].content == \
        "one=1 two=second three=third\nall=[1, 2, 3] count=3"


def test_previous_single_dependency_attribute():
    follow = WriteUnit().prompt("score was {previous.score}; by name {previous.judge.explanation}")
    model = ScriptedModel(['{"explanation": "fine", "score": 4}', '{"text": "ok"}'], record=True)
    row = (Pipeline() >> _explain() >> follow).via(model).run({"q": "Q"})
    assert row.ok, row.error
    assert model.requests[1].messages[0].content == "score was 4; by name fine"


def test_ambiguous_and_out_of_range_previous_are_error_states():
    for template, needle in [("{previous.judge.score}", "ambiguous"),
                             ("{previous.judge[5].score}", "there are 2 dependencies named 'judge'"),
                             ("{previous.critic}", "no dependency named 'critic'")]:
        model = ScriptedModel(['{"explanation": "e", "score": 3}'])
        row = (Pipeline() >> Layer(_explain(), 2) >> WriteUnit().prompt(template)).via(model).run({"q": "Q"})
        error = row["write"]
        assert error.kind == "template" and needle in error.message, error


def test_unit_namespace_and_input():
    unit = WriteUnit(name="writer").prompt("I am {unit.name}; input is {input.q}")
    model = ScriptedModel(['{"text": "t"}'], record=True)
    assert (Pipeline() >> unit).via(model).run({"q": "Q"}).ok
    assert model.requests[0].messages[0].content == "I am writer; input is Q"


def test_prompt_subclass_registers_and_is_usable():
    class PoliteJudge(Prompt):
        """
        @system
        Be polite.
        @user
        Rate {source.q}.
        """

    assert PromptRegistry.get("PoliteJudge") is PoliteJudge
    model = ScriptedModel(['{"explanation": "e", "score": 3}'], record=True)
    assert (Pipeline() >> ExplainUnit().prompt(PromptRegistry.get("PoliteJudge"))).via(model).run({"q": "this"}).ok
    assert [(m.role, m.content) for m in model.requests[0].messages] == [("system", "Be polite."),
                                                                         ("user", "Rate this.")]
    with pytest.raises(ConfigurationError, match="no prompt named 'Nope'"):
        PromptRegistry.get("Nope")


@given(st.text())
def test_any_interpolated_text_is_inserted_verbatim(data):
    assert render("@no_format\n{source}", source=data) == [("user", data)]


@given(st.text(alphabet=st.characters(blacklist_characters="@\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")))
def test_escaped_literal_text_round_trips(text):
    escaped = text.replace("{", "{{").replace("}", "}}")
    if not text.strip():
        with pytest.raises(TemplateError, match="empty"):
            compile_template("@no_format\n" + escaped)
        return
    assert render("@no_format\n" + escaped) == [("user", text)]
