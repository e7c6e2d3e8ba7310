// The OpenTelemetry JS openai instrumentation (@opentelemetry/instrumentation-openai) on the `openai` npm client,
// set up with the OTel JS SDK's own parts: a TracerProvider and a LoggerProvider (the instrumentation writes the
// messages as gen_ai.* log events when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true), each with a batch
// processor (NodeSDK's default) and an OTLP/HTTP exporter. A simple processor would send each record in its own
// request, concurrently: the records of one call share a millisecond timestamp, so their order would be lost. Arguments: `proto` (exporter-*-otlp-proto) or `json` (exporter-*-otlp-http: OTLP/JSON); then
// `chat` (Chat Completions, messages as gen_ai.system/user.message and gen_ai.choice events), `responses` (the
// Responses API: gen_ai.client.inference.operation.details events, named by the log record's eventName) or
// `chat-tool` (the tool scenario: per question a call offering the tool, the tool run here, the answering call,
// inside the app's own GenAI-semconv `invoke_agent` span, so each run is one trace).
// The first question as a plain call, the second streamed (Chat Completions: stream_options.include_usage);
// `chat-tool` makes plain calls only.
// Run like vercel_ai.mjs.
import { require, scenario, otlpTarget, report } from "./_peer.mjs";

const [encoding, api] = process.argv.slice(2);
const exporters = { proto: "otlp-proto", json: "otlp-http" }[encoding];
if (!exporters || !["chat", "responses", "chat-tool"].includes(api)) {
  throw new Error(`usage: otel_js_openai.mjs proto|json chat|responses|chat-tool, not ${encoding} ${api}`);
}

const { trace, context } = require("@opentelemetry/api");
const { logs } = require("@opentelemetry/api-logs");
const { AsyncLocalStorageContextManager } = require("@opentelemetry/context-async-hooks");
const { resourceFromAttributes } = require("@opentelemetry/resources");
const { TracerProvider, BatchSpanProcessor } = require("@opentelemetry/sdk-trace");
const { LoggerProvider, BatchLogRecordProcessor } = require("@opentelemetry/sdk-logs");
const { OTLPTraceExporter } = require(`@opentelemetry/exporter-trace-${exporters}`);
const { OTLPLogExporter } = require(`@opentelemetry/exporter-logs-${exporters}`);
const { registerInstrumentations } = require("@opentelemetry/instrumentation");
const { OpenAIInstrumentation } = require("@opentelemetry/instrumentation-openai");

const resource = resourceFromAttributes({ "service.name": scenario.service });
const tracerProvider = new TracerProvider({
  resource, spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(otlpTarget("traces")) })],
});
const loggerProvider = new LoggerProvider({
  resource, processors: [new BatchLogRecordProcessor({ exporter: new OTLPLogExporter(otlpTarget("logs")) })],
});
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(tracerProvider);
logs.setGlobalLoggerProvider(loggerProvider);
registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()], tracerProvider, loggerProvider });

const OpenAI = require("openai");  // after registerInstrumentations: the instrumentation patches it on require
const client = new OpenAI({ baseURL: process.env.PEER_OPENAI_BASE_URL, apiKey: "sk-fake-peer", maxRetries: 0 });
const [first, second] = scenario.questions;
let stream = [];
if (api === "chat-tool") {
  const tools = [{ type: "function", function: { name: scenario.tool, description: scenario.tool_description,
    parameters: { type: "object", properties: { card_last4: { type: "string" } }, required: ["card_last4"] } } }];
  const agent = { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "billing-agent" };
  for (const question of scenario.questions) {
    await trace.getTracer(scenario.service).startActiveSpan("invoke_agent billing-agent", { attributes: agent },
      async (span) => {
        const messages = [{ role: "system", content: scenario.system }, { role: "user", content: question }];
        const asked = (await client.chat.completions.create({ model: scenario.model, messages, tools }))
          .choices[0].message;
        messages.push(asked, ...asked.tool_calls.map((call) => ({ role: "tool", tool_call_id: call.id,
          content: scenario.tool_result })));
        await client.chat.completions.create({ model: scenario.model, messages, tools });
        span.end();
      });
  }
} else if (api === "chat") {
  const messages = (question) => [{ role: "system", content: scenario.system }, { role: "user", content: question }];
  await client.chat.completions.create({ model: scenario.model, messages: messages(first) });
  stream = await client.chat.completions.create({
    model: scenario.model, messages: messages(second), stream: true, stream_options: { include_usage: true },
  });
} else {
  await client.responses.create({ model: scenario.model, instructions: scenario.system, input: first });
  stream = await client.responses.create({ model: scenario.model, instructions: scenario.system, input: second,
    stream: true });
}
for await (const _ of stream) {
  // drain: the span ends with the stream
}
const method = api === "responses" ? "responses" : "chat.completions";
const calls = api === "chat-tool"
  ? scenario.questions.flatMap(() => [`openai.chat.completions.create(model=${scenario.model}, tools) -> tool call`,
    `openai.chat.completions.create(model=${scenario.model}, tools) -> answer`])
  : [`openai.${method}.create(model=${scenario.model})`, `openai.${method}.create(model=${scenario.model}, stream=true)`];
await report([tracerProvider, loggerProvider], ["@opentelemetry/instrumentation-openai", "openai",
  "@opentelemetry/sdk-trace", "@opentelemetry/sdk-logs", `@opentelemetry/exporter-trace-${exporters}`,
  `@opentelemetry/exporter-logs-${exporters}`], calls);
