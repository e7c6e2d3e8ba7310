// Two generateText calls with the Vercel AI SDK (`ai` + @ai-sdk/openai, chat API) and its
// experimental_telemetry on, exported by @opentelemetry/exporter-trace-otlp-proto.
// Run by tests/peers/record.py with NODE_PATH at the peer's node_modules; the scenario (system
// prompt, questions, model) comes as JSON in PEER_SCENARIO so it stays defined once, in _peer.py.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.env.PEER_NODE_MODULES, "noop.js"));
const { generateText } = require("ai");
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

const openai = createOpenAI({ baseURL: process.env.PEER_OPENAI_BASE_URL, apiKey: "sk-fake-peer" });
const calls = [];
for (const question of scenario.questions) {
  await generateText({
    model: openai.chat(scenario.model),
    system: scenario.system,
    prompt: question,
    experimental_telemetry: { isEnabled: true, functionId: "billing-answer" },
  });
  calls.push(`ai.generateText(model=openai.chat(${scenario.model}))`);
}
await provider.forceFlush();
await provider.shutdown();

const packages = {};
for (const name of ["ai", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node", "@opentelemetry/exporter-trace-otlp-proto"]) {
  packages[name] = JSON.parse(fs.readFileSync(path.join(process.env.PEER_NODE_MODULES, name, "package.json"))).version;
}
console.log(JSON.stringify({ packages, calls }));
