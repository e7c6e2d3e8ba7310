"""Run a real peer instrumentation (in its side venv) against the fake LLM servers.

Each `Sender` is one instrumentation package in one mode; `run_sender` starts its script
(tests/peers/senders/) in the family's side venv (`make peers` builds them) with the OTLP
endpoint to send to: the capturing server of tests/peers/record.py, or the real collector in
the live tests (tests/peers/test_live_peers.py). Used from the main venv only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.peers.fake_bedrock import FakeBedrock
from tests.peers.fake_gemini import FakeGemini
from tests.peers.fake_ollama import FakeOpenAIAndOllama
from verdict_demo.fake_llm import (
    FakeAnthropic,
    FakeOpenAI,
    FakeServer,
    RecordedRequest,
    Reply,
    ToolCall,
)

ROOT = Path(__file__).resolve().parents[2]
SENDERS_DIR = Path(__file__).with_name("senders")
FIXTURES = ROOT / "tests" / "fixtures" / "dialects"
sys.path.insert(0, str(SENDERS_DIR))
import _peer  # noqa: E402  (the scenario, shared with the side-venv scripts)

# (input_tokens, output_tokens) the fake servers report for each question, so tokens are checkable;
# TOOL_USAGE for the tool-call reply that comes first in the tool scenario.
USAGE = ((41, 17), (23, 11))
TOOL_USAGE = ((37, 9), (29, 8))
REFUND_USAGE = ((45, 12), (33, 10))  # the second tool call's reply in the two-tool scenario
FINAL_ANSWER = "final_answer"  # verdict_daemon.service.material.FINAL_ANSWER_TOOL


@dataclass(frozen=True)
class Sender:
    name: str  # fixture directory under tests/fixtures/dialects/
    family: str  # side venv .venv-peer-<family> (or a Node family, tests/peers/<family>/: node_modules in .peer-<family>)
    argv: tuple[str, ...]  # script under senders/ and its arguments
    env: dict[str, str] = field(default_factory=dict)
    provider: str = "openai"  # which fake server the calls go to
    provider_name: str = ""  # the `provider` its rows name, when not the fake server's (an OpenAI-compatible API)
    names_provider: bool = True  # False: its spans state no provider (Langfuse generations)
    model: str = ""  # the model its calls name, when not the scenario's (_peer.MODEL / ANTHROPIC_MODEL)
    model_as_sent: str = ""  # the model name its spans state, when not the one the app asked for
    tool: bool = False  # the tool scenario: per question a tool-call reply, the tool, then the answer
    second_tool: bool = False  # with `tool`: a second tool-call reply (refund_charge) after the first tool's result
    final_answer: bool = False  # the answer comes as a `final_answer` tool call (smolagents)
    operation: str = "chat"  # the GenAI operation its model calls are (Google ADK: generate_content)
    note: str = ""

    @property
    def node(self) -> bool:
        return (ROOT / "tests" / "peers" / self.family / "package.json").exists()

    @property
    def environment(self) -> Path:
        return ROOT / (f".peer-{self.family}" if self.node else f".venv-peer-{self.family}")

    def command(self) -> list[str]:
        script = str(SENDERS_DIR / self.argv[0])
        if self.node:
            return ["node", script, *self.argv[1:]]
        return [str(self.environment / "bin" / "python"), script, *self.argv[1:]]

    def installed(self) -> bool:
        return (self.environment / ".installed").exists()


CONTENT_ON = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
SENDERS = (
    Sender("openinference-openai", "openinference", ("openai_chat.py", "openinference")),
    Sender("openllmetry-openai-0.40", "openllmetry-old", ("openai_chat.py", "openllmetry"),
           note="OpenLLMetry before the semconv migration: gen_ai.prompt.N.*, gen_ai.usage.prompt_tokens"),
    Sender("openllmetry-openai", "openllmetry", ("openai_chat.py", "openllmetry")),
    Sender("openai-v2-default", "openai-v2", ("openai_chat.py", "openai-v2"), CONTENT_ON,
           note="default semconv mode: content only in log records (gen_ai.user.message, gen_ai.choice)"),
    Sender("openai-v2-span-only", "openai-v2", ("openai_chat.py", "openai-v2"),
           {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"}),
    Sender("openai-v2-event-only", "openai-v2", ("openai_chat.py", "openai-v2"),
           {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "event_only"},
           note="latest semconv, content only in one gen_ai.client.inference.operation.details log record per call"),
    Sender("openllmetry-anthropic-native", "openllmetry", ("anthropic_messages.py",), provider="anthropic",
           note="OpenLLMetry's Anthropic spans and the anthropic SDK's own spans for the same calls"),
    Sender("pydantic-ai", "pydantic-ai", ("pydantic_ai_agent.py",)),
    Sender("pydantic-ai-tool", "pydantic-ai", ("pydantic_ai_agent.py", "tool"), tool=True,
           note="pydantic-ai as above with the scenario's tool: agent run, chat (tool call), running tools, chat"),
    Sender("vercel-ai", "vercel", ("vercel_ai.mjs",),
           note="ai generateText with experimental_telemetry: outer ai.generateText and inner ai.generateText.doGenerate"),
    Sender("vercel-ai-conversation", "vercel", ("vercel_ai.mjs", "conversation"),
           note="the two questions as turns of one chat (messages: the turns before), experimental_telemetry's "
                "metadata.sessionId: ai.telemetry.metadata.sessionId"),
    Sender("otel-js-openai", "otel-js", ("otel_js_openai.mjs", "proto", "chat"), CONTENT_ON,
           note="@opentelemetry/instrumentation-openai (OTel JS SDK, OTLP protobuf): a plain then a streamed call; "
                "content only in gen_ai.* log events"),
    Sender("otel-js-openai-json", "otel-js", ("otel_js_openai.mjs", "json", "chat"), CONTENT_ON,
           note="the same calls exported as OTLP/JSON (exporter-trace-otlp-http, exporter-logs-otlp-http)"),
    Sender("otel-js-openai-responses", "otel-js", ("otel_js_openai.mjs", "proto", "responses"), CONTENT_ON,
           note="the Responses API under the same instrumentation: two gen_ai.client.inference.operation.details "
                "log events per call (input, output)"),
    Sender("otel-js-openai-responses-json", "otel-js", ("otel_js_openai.mjs", "json", "responses"), CONTENT_ON,
           note="the Responses API calls exported as OTLP/JSON"),
    Sender("otel-js-openai-tool", "otel-js", ("otel_js_openai.mjs", "proto", "chat-tool"), CONTENT_ON, tool=True,
           note="the tool scenario on Chat Completions inside the app's invoke_agent span: the tool call in "
                "gen_ai.choice, its result in gen_ai.tool.message"),
    # Families built by `make peers-record` only (RECORD_ONLY_FAMILIES): replayed from their fixtures in the suite.
    Sender("openlit", "openlit", ("openlit_chat.py", "events"),
           note="openlit.init defaults: semconv content attributes and one operation.details log record per call"),
    Sender("openlit-no-events", "openlit", ("openlit_chat.py", "no-events"),
           note="openlit.init(disable_events=True): content in the span only"),
    Sender("openlit-together", "openlit", ("openlit_chat.py", "together"), provider_name="together",
           note="OpenLIT's text form: `role: content` lines in gen_ai.input.messages and gen_ai.content.prompt events"),
    Sender("semantic-kernel", "semantic-kernel", ("semantic_kernel_chat.py",),
           note="SK model diagnostics (sensitive): per-message GenAI events as log records through Python logging"),
    Sender("langfuse", "langfuse", ("langfuse_openai.py",), names_provider=False,
           note="Langfuse SDK: langfuse.openai generations inside span observations, its own OTLP exporter"),
    Sender("genkit", "genkit", ("genkit_generate.py",),
           note="Genkit (Python) with genkit-openai: flow, generate util and model action spans"),
    Sender("langchain-openinference", "langchain", ("langchain_app.py", "chain", "openinference"),
           note="LangChain prompt | ChatOpenAI | parser under OpenInference: chain, prompt, LLM and parser spans"),
    Sender("langchain-openinference-openai", "langchain", ("langchain_app.py", "chain", "openinference", "with-openai"),
           note="the Phoenix quick-start: OpenInference LangChain and OpenAI instrumentations describe each call twice"),
    Sender("langchain-openllmetry", "langchain", ("langchain_app.py", "chain", "openllmetry"),
           note="LangChain under OpenLLMetry: workflow/task steps (traceloop.span.kind) and the chat span"),
    Sender("langchain-openllmetry-openai", "langchain", ("langchain_app.py", "chain", "openllmetry", "with-openai"),
           note="OpenLLMetry's LangChain and OpenAI instrumentations together: each call described twice"),
    Sender("langchain-openllmetry-stream", "langchain", ("langchain_app.py", "stream", "openllmetry"),
           note="the chain consumed with .stream() under OpenLLMetry: the streamed chat span"),
    Sender("gemini-otel", "gemini", ("gemini_generate.py", "otel"),
           {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_and_event"}, provider="gemini",
           provider_name="gcp.gemini", operation="generate_content",
           note="the OpenTelemetry contrib google-genai instrumentation (latest semconv, content on span and event)"),
    Sender("gemini-openinference", "gemini", ("gemini_generate.py", "openinference"), provider="gemini",
           provider_name="gcp.gemini", operation="generate_content", note="OpenInference google-genai: the answer's role is Gemini's `model`"),
    Sender("gemini-openllmetry", "gemini", ("gemini_generate.py", "openllmetry"), provider="gemini",
           provider_name="gcp.gemini", operation="generate_content", note="OpenLLMetry google-generativeai on the google-genai client"),
    Sender("bedrock-openinference", "bedrock", ("bedrock_runtime.py", "openinference"), provider="bedrock",
           provider_name="aws.bedrock", note="boto3 bedrock-runtime, Converse then InvokeModel, under OpenInference"),
    Sender("bedrock-openllmetry", "bedrock", ("bedrock_runtime.py", "openllmetry"), provider="bedrock",
           provider_name="aws.bedrock", model_as_sent=_peer.BEDROCK_MODEL.partition(".")[2],
           note="the same calls under OpenLLMetry's Bedrock instrumentation, which drops the modelId's vendor prefix"),
    Sender("langgraph-openinference", "langchain", ("langchain_app.py", "graph", "openinference"),
           note="a LangGraph StateGraph (draft -> review) under OpenInference: graph and node spans, one model call each"),
    Sender("langgraph-openllmetry", "langchain", ("langchain_app.py", "graph", "openllmetry"),
           note="the same graph under OpenLLMetry: workflow/task spans for the graph and its nodes"),
    Sender("langgraph-agent-openinference", "langchain", ("langchain_app.py", "agent", "openinference"), tool=True,
           note="a LangGraph tool-calling agent (agent node, ToolNode) under OpenInference: issue 29's trajectory"),
    Sender("langgraph-agent-two-tools-openinference", "langchain", ("langchain_app.py", "agent-two-tools", "openinference"),
           tool=True, second_tool=True,
           note="the LangGraph agent with two tools: per question lookup_charge, then refund_charge, then the answer"),
    # Issue 25's senders (record-only as well).
    Sender("mlflow", "mlflow", ("mlflow_openai.py",),
           note="mlflow.openai.autolog() exporting OTLP: mlflow.spanType/spanInputs/spanOutputs/chat.tokenUsage"),
    Sender("mlflow-stream", "mlflow", ("mlflow_openai.py", "stream"),
           note="mlflow.openai.autolog(), streamed calls: the chunks as span events, the reply rebuilt in spanOutputs"),
    Sender("logfire", "logfire", ("logfire_openai.py", "plain"), note="logfire.instrument_openai"),
    Sender("logfire-stream", "logfire", ("logfire_openai.py", "stream"),
           note="logfire.instrument_openai, streamed: a request span + a zero-length span with the rest, two traces"),
    Sender("litellm-otel", "litellm", ("litellm_completion.py", "otel"),
           note="LiteLLM's own `otel` callback; litellm.completion(model='openai/gpt-4o-mini')"),
    Sender("openinference-litellm", "litellm", ("litellm_completion.py", "openinference"),
           note="OpenInference's LiteLLM instrumentation; model named 'openai/gpt-4o-mini'"),
    Sender("openinference-litellm-openai", "litellm", ("litellm_completion.py", "openinference+openai"),
           note="OpenInference's LiteLLM and OpenAI instrumentations together: two LLM spans per call"),
    Sender("mistral-native", "mistral", ("mistral_chat.py",), {"MISTRAL_SDK_TELEMETRY": "global"},
           provider_name="mistral_ai", model="mistral-small-latest",
           note="the Mistral SDK's own spans on the global TracerProvider (MISTRAL_SDK_TELEMETRY=global)"),
    Sender("mistral-native-openinference", "mistral", ("mistral_chat.py", "openinference"),
           {"MISTRAL_SDK_TELEMETRY": "global"}, provider_name="mistral_ai", model="mistral-small-latest",
           note="the Mistral SDK's own spans and OpenInference's mistralai spans for the same calls, two traces each"),
    Sender("openllmetry-ollama", "ollama", ("ollama_chat.py", "openllmetry"), provider_name="ollama",
           model="llama3.2", note="the ollama client's native /api/chat under OpenLLMetry"),
    Sender("openinference-ollama", "ollama", ("ollama_chat.py", "openinference"), provider_name="ollama",
           model="llama3.2", note="the ollama client's native /api/chat under OpenInference"),

    # Agent frameworks of 2026 (issue 33), each with its documented OpenTelemetry set-up; live in `make test` too
    # (`make peers`), smolagents and agno in one side venv (`agents`).
    Sender("vercel-ai-7", "vercel7", ("vercel_ai_7.mjs",),
           note="ai 7 with registerTelemetry(new OpenTelemetry()) from @ai-sdk/otel: GenAI-semconv spans; "
                "generateText, then streamText"),
    Sender("vercel-ai-7-tool", "vercel7", ("vercel_ai_7.mjs", "tool"), tool=True,
           note="ai 7 as vercel-ai-7 with a tool: invoke_agent, step 1 (chat -> tool call, execute_tool), step 2"),
    Sender("vercel-ai-7-legacy", "vercel7", ("vercel_ai_7.mjs", "legacy"),
           note="ai 7 with @ai-sdk/otel's LegacyOpenTelemetry: the ai.* spans, context as ai.settings.context.*"),
    Sender("smolagents-openinference", "agents", ("smolagents_agent.py",), tool=True, final_answer=True,
           note="smolagents ToolCallingAgent with OpenInference's SmolagentsInstrumentor: AGENT, CHAIN (steps), "
                "LLM and TOOL spans; the answer is a final_answer tool call"),
    Sender("agno-openinference", "agents", ("agno_agent.py", "openinference"), tool=True,
           note="Agno Agent with OpenInference's AgnoInstrumentor"),
    Sender("agno-openllmetry", "agents", ("agno_agent.py", "openllmetry"), tool=True,
           note="Agno Agent with OpenLLMetry's AgnoInstrumentor"),
    Sender("agno-both", "agents", ("agno_agent.py", "both"), tool=True,
           note="Agno Agent with both instrumentations at once: two descriptions of each model call"),
    Sender("llama-index-openinference", "llama-index", ("llama_index_agent.py", "openinference"), tool=True,
           note="LlamaIndex FunctionAgent workflow with OpenInference's LlamaIndexInstrumentor"),
    Sender("llama-index-openllmetry", "llama-index", ("llama_index_agent.py", "openllmetry"), tool=True,
           note="LlamaIndex FunctionAgent workflow with OpenLLMetry's LlamaIndexInstrumentor"),
    Sender("llama-index-both", "llama-index", ("llama_index_agent.py", "both"), tool=True,
           note="LlamaIndex FunctionAgent workflow with both instrumentations at once"),
    Sender("strands", "strands", ("strands_agent.py", "native"), tool=True, names_provider=False,
           note="Strands Agents with its own StrandsTelemetry: GenAI semconv, messages as span events"),
    Sender("strands-latest", "strands", ("strands_agent.py", "latest"), tool=True, names_provider=False,
           env={"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"},
           note="Strands Agents, latest experimental GenAI semconv: messages as gen_ai.input/output.messages"),
    Sender("strands-openinference", "strands", ("strands_agent.py", "openinference"), tool=True, names_provider=False,
           note="Strands Agents' spans rewritten by OpenInference's StrandsAgentsToOpenInferenceProcessor"),
    Sender("google-adk", "google-adk", ("google_adk_agent.py",), tool=True, env=CONTENT_ON,
           operation="generate_content",
           note="Google ADK LlmAgent (LiteLlm to OpenAI) with ADK's own OpenTelemetry: generate_content spans, "
                "content in gen_ai.client.inference.operation.details log records"),
    Sender("crewai-openinference", "crewai", ("crewai_crew.py", "openinference"), tool=True,
           note="CrewAI crew with OpenInference's CrewAIInstrumentor and its OpenAI instrumentation"),
    Sender("crewai-openllmetry", "crewai", ("crewai_crew.py", "openllmetry"), tool=True,
           note="CrewAI crew with OpenLLMetry's CrewAIInstrumentor and its OpenAI instrumentation"),
    Sender("crewai-both", "crewai", ("crewai_crew.py", "both"), tool=True,
           note="CrewAI crew with both instrumentations at once"),
    Sender("openai-agents-openinference", "openai-agents", ("openai_agents_run.py",), tool=True,
           note="OpenAI Agents SDK Agent (chat completions model, a function tool) with OpenInference's "
                "OpenAIAgentsInstrumentor: agent, generation and function spans"),
    Sender("openai-agents-session-openinference", "openai-agents", ("openai_agents_run.py", "session"),
           note="the OpenAI Agents SDK, the two questions as turns of one SQLiteSession (no tool), under "
                "OpenInference's using_session: session.id on every span"),
    Sender("llama-index-otel", "llama-index", ("llama_index_agent.py", "own"), tool=True,
           note="LlamaIndex FunctionAgent workflow with LlamaIndex's own llama-index-observability-otel: "
                "the call in LLMChatStartEvent / LLMChatEndEvent span events"),
)
# Their side venvs take minutes to install: `make peers-record` builds them, `make test` replays their fixtures
# (the Makefile's PEER_RECORD_FAMILIES).
RECORD_ONLY_FAMILIES = frozenset({"langchain", "gemini", "bedrock"}
                                  | {"mlflow", "logfire", "litellm", "mistral", "ollama"}
                                  | {"openai-agents"})
BY_NAME = {s.name: s for s in SENDERS}


PROVIDER_MODELS = {"anthropic": _peer.ANTHROPIC_MODEL, "gemini": _peer.GEMINI_MODEL, "bedrock": _peer.BEDROCK_MODEL}


def expected_llm_calls(sender: Sender) -> list[dict]:
    """The `llm_calls` rows a sender's run should become, in order (the recordings' manifests and the live
    tests): per question its answer (as a `final_answer` tool call where the framework answers so); in the
    tool scenario first the call that asks for the tool (`tool_call`), in the two-tool scenario then the call that
    asks for the second."""
    model = sender.model_as_sent or sender.model or PROVIDER_MODELS.get(sender.provider, _peer.MODEL)
    about = {"operation": sender.operation,
             "provider": (sender.provider_name or sender.provider) if sender.names_provider else None}
    tools = ((_peer.TOOL, TOOL_USAGE),) * sender.tool + ((_peer.REFUND_TOOL, REFUND_USAGE),) * sender.second_tool
    calls = []
    for i, (question, answer, usage) in enumerate(zip(_peer.QUESTIONS, _peer.ANSWERS, USAGE, strict=True)):
        for tool, tool_usage in tools:
            calls.append({"request_model": model, "input_tokens": tool_usage[i][0], "output_tokens": tool_usage[i][1],
                          "question": question, "tool_call": tool, **about})
        calls.append({"request_model": model, "input_tokens": usage[0], "output_tokens": usage[1],
                      "question": question, "answer": answer,
                      **({"tool_call": FINAL_ANSWER} if sender.final_answer else {}), **about})
    return calls


def _asked(text: str) -> int | None:
    """Which scenario question a request asks: the one it carries last (a later turn of a conversation carries the
    earlier questions as its history)."""
    at = {i: max(text.rfind(json.dumps(question)[1:-1]), text.rfind(question))
          for i, question in enumerate(_peer.QUESTIONS)}
    asked = [i for i in at if at[i] >= 0]
    return max(asked, key=at.__getitem__) if asked else None


def _reply(request: RecordedRequest) -> Reply:
    """The scripted answer to the scenario question the request asks; when the request offers the scenario's tool
    and holds no result of it yet, a call of that tool instead (then the same for the second tool)."""
    text = request.raw.decode("utf-8", "replace")
    i = _asked(text)
    if i is None:
        return Reply("unexpected request", usage=(1, 1))
    if f'"{_peer.TOOL}"' in text and _peer.TOOL_RESULT not in text:
        return Reply("", tool_calls=(ToolCall(_peer.TOOL, _peer.TOOL_ARGUMENTS, f"call_{i}"),), usage=TOOL_USAGE[i])
    if f'"{_peer.REFUND_TOOL}"' in text and _peer.REFUND_RESULT not in text:
        return Reply("", tool_calls=(ToolCall(_peer.REFUND_TOOL, _peer.REFUND_ARGUMENTS, f"refund_{i}"),),
                     usage=REFUND_USAGE[i])
    if f'"{FINAL_ANSWER}"' in text:  # smolagents' agents answer through this tool
        return Reply("", tool_calls=(ToolCall(FINAL_ANSWER, {"answer": _peer.ANSWERS[i]}, f"answer_{i}"),),
                     usage=USAGE[i])
    return Reply(_peer.ANSWERS[i], usage=USAGE[i])


@contextmanager
def fake_providers() -> Iterator[tuple[FakeOpenAI, FakeAnthropic]]:
    with FakeOpenAIAndOllama() as openai_server, FakeAnthropic() as anthropic_server:
        openai_server.handler = _reply
        anthropic_server.handler = _reply
        yield openai_server, anthropic_server


@dataclass(frozen=True)
class Run:
    packages: dict[str, str]
    calls: list[str]
    provider_requests: int


def run_sender(sender: Sender, otlp_endpoint: str, openai_server: FakeOpenAI, anthropic_server: FakeAnthropic,
               otlp_headers: str = "", timeout: float = 240.0) -> Run:
    """Run one sender to completion (its exporters flushed); raise with its stderr on failure."""
    if not sender.installed():
        raise RuntimeError(f"{sender.family} side environment missing: run `make peers`")
    with ExitStack() as stack:
        own = stack.enter_context(_own_server(sender.provider)) if sender.provider in OWN_SERVERS else None
        server = own or (anthropic_server if sender.provider == "anthropic" else openai_server)
        before = server.request_count
        urls = {"PEER_OPENAI_BASE_URL": openai_server.base_url, "PEER_ANTHROPIC_BASE_URL": anthropic_server.base_url,
                **({OWN_SERVERS[sender.provider][1]: own.base_url} if own else {})}
        proc = _run(sender, otlp_endpoint, urls, otlp_headers, timeout)
        requests = server.request_count - before
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"sender {sender.name} printed no report:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    report = json.loads(lines[-1])
    return Run(report["packages"], report["calls"], requests)


# Providers only a few senders call get a fake server per run: (its class, the variable naming its URL).
OWN_SERVERS: dict[str, tuple[type[FakeServer], str]] = {"gemini": (FakeGemini, "PEER_GEMINI_BASE_URL"),
                                                         "bedrock": (FakeBedrock, "PEER_BEDROCK_URL")}


@contextmanager
def _own_server(provider: str) -> Iterator[FakeServer]:
    with OWN_SERVERS[provider][0]() as server:
        server.handler = _reply
        yield server


def _run(sender: Sender, otlp_endpoint: str, urls: dict[str, str], otlp_headers: str,
         timeout: float) -> subprocess.CompletedProcess:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_", "OPENAI_"))},
        **sender.env,
        "PEER_OTLP_ENDPOINT": otlp_endpoint,
        "PEER_OTLP_HEADERS": otlp_headers,
        **urls,
        "PEER_NODE_MODULES": str(sender.environment / "node_modules"),
        "PEER_SCENARIO": json.dumps({"system": _peer.SYSTEM, "questions": list(_peer.QUESTIONS),
                                     "model": _peer.MODEL, "service": _peer.SERVICE, "tool": _peer.TOOL,
                                     "tool_description": _peer.TOOL_DESCRIPTION, "tool_result": _peer.TOOL_RESULT,
                                     "conversation": _peer.CONVERSATION}),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    proc = subprocess.run(sender.command(), env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"sender {sender.name} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc
