"""`make demo` / `python -m verdict_demo`: the newcomer's end-to-end run, offline.

Its own top-layer package: it builds on the SDK, the collector and the daemon, and nothing in the product
imports it (tests may). The pieces (each importable on its own):

- `cli`: options, signal handling, progress and the summary (text or `--json`);
- `orchestrator`: the run: fake LLM, `verdict-collector`, the app, `verdict-daemon`, then the summary;
- `processes`: child processes in their own sessions, stopped in order (SIGTERM, then SIGKILL);
- `child`: the wrapper each child runs under, which stops it if the demo is killed outright;
- `scenario`: the support bot's intents over MT-Bench questions, the simulated days, the regression;
- `llm`: what the bundled fake LLM answers (and how the injected regression corrupts it);
- `app`: the instrumented support-bot app (its own process);
- `backdating`: the exporter hook that moves spans onto simulated days;
- `judge`: the deterministic offline judge (`offline/heuristic-judge`, a model provider registered through
  the entry point group `verdict.model_providers`, see verdict.models.registry);
- `summary`: the final state read back from `state.duckdb` and the lake;
- `fake_llm`: the bundled OpenAI/Anthropic-compatible fake servers (also the tests' fakes, `tests.fakes`).
"""
