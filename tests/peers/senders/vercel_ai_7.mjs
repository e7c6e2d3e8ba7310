// The Vercel AI SDK 7 (`ai` 7 + @ai-sdk/openai, chat API) with its OpenTelemetry integration as
// documented: `registerTelemetry(new OpenTelemetry())` from @ai-sdk/otel (GenAI-semconv spans:
// invoke_agent / step N / chat / execute_tool). The first question through generateText, the second
// through streamText; exported by @opentelemetry/exporter-trace-otlp-proto. Run like vercel_ai.mjs.
// Argument `tool`: both calls offer the scenario's tool and run up to 3 steps (tool call, tool, answer);
// `legacy`: @ai-sdk/otel's LegacyOpenTelemetry instead (the ai.* spans of AI SDK 6, the call's `runtimeContext` as
// ai.settings.context.*).
import { require, scenario, tracerProvider, report } from "./_peer.mjs";

const { generateText, streamText, registerTelemetry, tool, stepCountIs } = require("ai");
const { OpenTelemetry, LegacyOpenTelemetry } = require("@ai-sdk/otel");
const { createOpenAI } = require("@ai-sdk/openai");
const { z } = require("zod");

const provider = tracerProvider();
const mode = process.argv[2];
registerTelemetry(mode === "legacy" ? new LegacyOpenTelemetry() : new OpenTelemetry());

const openai = createOpenAI({ baseURL: process.env.PEER_OPENAI_BASE_URL, apiKey: "sk-fake-peer" });
// The call's runtime context reaches telemetry only for the keys `includeRuntimeContext` names.
const telemetry = { functionId: "billing-answer", includeRuntimeContext: { tenantTier: true } };
const options = { model: openai.chat(scenario.model), system: scenario.system, telemetry,
  runtimeContext: { tenantTier: "pro" } };
if (mode === "tool") {
  options.tools = {
    [scenario.tool]: tool({
      description: scenario.tool_description,
      inputSchema: z.object({ card_last4: z.string() }),
      execute: async () => scenario.tool_result,
    }),
  };
  options.stopWhen = stepCountIs(3);
}
const [first, second] = scenario.questions;
await generateText({ ...options, prompt: first });
const stream = streamText({ ...options, prompt: second });
for await (const _ of stream.textStream) {
  // drain: the spans end with the stream
}
await stream.text;
const calls = [`ai.generateText(model=openai.chat(${scenario.model}))`, `ai.streamText(model=openai.chat(${scenario.model}))`];
await report(provider, ["ai", "@ai-sdk/otel", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node",
  "@opentelemetry/exporter-trace-otlp-proto"], calls);
