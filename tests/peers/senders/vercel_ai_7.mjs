// The Vercel AI SDK 7 (`ai` 7 + @ai-sdk/openai, chat API) with its OpenTelemetry integration as
// documented: `registerTelemetry(new OpenTelemetry())` from @ai-sdk/otel (GenAI-semconv spans:
// invoke_agent / step N / chat / execute_tool). The first question through generateText, the second
// through streamText; exported by @opentelemetry/exporter-trace-otlp-proto. Run like vercel_ai.mjs.
// Argument `tool`: both calls offer the scenario's tool and run up to 3 steps (tool call, tool, answer);
// `legacy`: @ai-sdk/otel's LegacyOpenTelemetry instead (the ai.* spans of AI SDK 6, the call's `runtimeContext` as
// ai.settings.context.*).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.env.PEER_NODE_MODULES, "noop.js"));
const { generateText, streamText, registerTelemetry, tool, stepCountIs } = require("ai");
const { z } = require("zod");
const { OpenTelemetry, LegacyOpenTelemetry } = require("@ai-sdk/otel");
const { createOpenAI } = require("@ai-sdk/openai");
const { NodeTracerProvider, SimpleSpanProcessor } = require("@opentelemetry/sdk-trace-node");
const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-proto");
const { resourceFromAttributes } = require("@opentelemetry/resources");

const scenario = JSON.parse(process.env.PEER_SCENARIO);
const headers = Object.fromEntries(
  (process.env.PEER_OTLP_HEADERS || "").split(",").filter((p) => p.includes("=")).map((p) => p.split(/=(.*)/s).slice(0, 2)),
);
const exporter = new OTLPTraceExporter({ url: process.env.PEER_OTLP_ENDPOINT.replace(/\/$/, "") + "/v1/traces", headers });
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": scenario.service }),
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
provider.register();
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
await provider.forceFlush();
await provider.shutdown();

const packages = {};
for (const name of ["ai", "@ai-sdk/otel", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node", "@opentelemetry/exporter-trace-otlp-proto"]) {
  packages[name] = JSON.parse(fs.readFileSync(path.join(process.env.PEER_NODE_MODULES, name, "package.json"))).version;
}
console.log(JSON.stringify({ packages, calls }));
