"""The model-provider registry (verdict.models.registry): packages above the SDK add providers, by
`register_provider` or by an entry point in `verdict.model_providers`, and the SDK never imports them."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verdict.models import registry
from verdict.models.registry import Provider, register_provider, resolve_model
from verdict.models.scripted import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]


def test_a_registered_provider_resolves_its_strings_and_is_named_in_errors(monkeypatch):
    # This process's registry and client cache, restored afterwards: the provider stays this test's.
    monkeypatch.setattr(registry, "_providers", dict(registry._providers))
    monkeypatch.setattr(registry, "_instances", dict(registry._instances))
    built = []

    def build(name, options):
        built.append((name, options))
        return ScriptedModel(["ok"], name=f"echo-test/{name}")

    provider = Provider("echo-test", build, '"echo-test/<model>" (a scripted echo)')
    register_provider(provider)
    register_provider(provider)  # the same provider again: no error
    model = resolve_model("echo-test/small")
    assert model.name == "echo-test/small" and resolve_model("echo-test/small") is model  # cached
    assert built == [("small", {})]
    with pytest.raises(ValueError, match=r'"echo-test/<model>" \(a scripted echo\)'):
        resolve_model("nowhere/x")
    with pytest.raises(ValueError, match="'echo-test' is already registered"):
        register_provider(Provider("echo-test", build, "another"))
    with pytest.raises(ValueError, match="'openai' is already registered"):
        register_provider(Provider("openai", build, "a second openai"))


@pytest.mark.parametrize("prefix", ["", "Upper", "has/slash", "9lives"])
def test_a_provider_prefix_is_a_lower_case_word(prefix):
    with pytest.raises(ValueError, match="a provider prefix is lower-case"):
        Provider(prefix, lambda name, options: ScriptedModel([]), "x")


def _python(code: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    path = ":".join(map(str, (*paths, ROOT)))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=60)


def test_the_demo_judge_resolves_through_its_entry_point_in_a_fresh_process():
    """What the daemon the demo starts does: "offline/…" from a config, verdict_demo never imported first."""
    done = _python("""
        import sys
        from verdict.models.registry import resolve_model
        assert "verdict_demo" not in sys.modules
        print(type(resolve_model("offline/heuristic-judge")).__module__)
    """)
    assert (done.returncode, done.stdout.strip()) == (0, "verdict_demo.judge"), done.stderr


def test_a_plug_in_that_cannot_load_is_named_with_its_reason(tmp_path):
    """An installed distribution (a .dist-info on sys.path) declaring providers: a broken one is reported
    when named and listed with its reason in the accepted forms; a good one still resolves."""
    info = tmp_path / "plugin_test-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-test\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[verdict.model_providers]\nbroken = no_such_module_x:PROVIDER\n"
                                           "wrong = plugin_test_mod:NOT_A_PROVIDER\ngood = plugin_test_mod:PROVIDER\n")
    (tmp_path / "plugin_test_mod.py").write_text(
        "from verdict.models.registry import Provider\nfrom verdict.models.scripted import ScriptedModel\n"
        "NOT_A_PROVIDER = 42\n"
        "PROVIDER = Provider('good', lambda name, options: ScriptedModel(['x'], name='good/' + name), '\"good/<m>\"')\n")
    done = _python("""
        from verdict.models.registry import resolve_model
        print(resolve_model("good/m").name)
        for spec in ("broken/m", "wrong/m", "nope/m"):
            try:
                resolve_model(spec)
            except ValueError as exc:
                print(exc)
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    good, broken, wrong, unknown = done.stdout.splitlines()
    assert good == "good/m"
    assert broken == ("model provider 'broken' (no_such_module_x:PROVIDER) cannot be loaded: "
                      "ModuleNotFoundError: No module named 'no_such_module_x'")
    assert wrong.startswith("entry point 'wrong' (plugin_test_mod:NOT_A_PROVIDER) in verdict.model_providers is not")
    assert '"good/<m>"' in unknown and '"offline/heuristic-judge" (offline rubric judge)' in unknown
    assert '"broken/<model>" (model provider \'broken\' (no_such_module_x:PROVIDER) cannot be loaded' in unknown
