// The OpenTelemetry JS openai instrumentation (@opentelemetry/instrumentation-openai) on the `openai` npm client,
// set up with the OTel JS SDK's own parts: a TracerProvider and a LoggerProvider (the instrumentation writes the
// messages as gen_ai.* log events when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true), each with an
// OTLP/HTTP exporter. Arguments: `proto` (exporter-*-otlp-proto) or `json` (exporter-*-otlp-http: OTLP/JSON); then
// `chat` (Chat Completions, messages as gen_ai.system/user.message and gen_ai.choice events) or `responses` (the
// Responses API: one gen_ai.client.inference.operation.details event per call, named by the log record's eventName).
// The first question as a plain call, the second streamed (Chat Completions: stream_options.include_usage).
// Run like vercel_ai.mjs.
import { require, scenario, otlpTarget, report } from "./_peer.mjs";

const [encoding, api] = process.argv.slice(2);
const exporters = { proto: "otlp-proto", json: "otlp-http" }[encoding];
if (!exporters || !["chat", "responses"].includes(api)) {
  throw new Error(`usage: otel_js_openai.mjs proto|json chat|responses, not ${encoding} ${api}`);
}

const { trace, context } = require("@opentelemetry/api");
const { logs } = require("@opentelemetry/api-logs");
const { AsyncLocalStorageContextManager } = require("@opentelemetry/context-async-hooks");
const { resourceFromAttributes } = require("@opentelemetry/resources");
const { TracerProvider, SimpleSpanProcessor } = require("@opentelemetry/sdk-trace");
const { LoggerProvider, SimpleLogRecordProcessor } = require("@opentelemetry/sdk-logs");
const { OTLPTraceExporter } = require(`@opentelemetry/exporter-trace-${exporters}`);
const { OTLPLogExporter } = require(`@opentelemetry/exporter-logs-${exporters}`);
const { registerInstrumentations } = require("@opentelemetry/instrumentation");
const { OpenAIInstrumentation } = require("@opentelemetry/instrumentation-openai");

const resource = resourceFromAttributes({ "service.name": scenario.service });
const tracerProvider = new TracerProvider({
  resource, spanProcessors: [new SimpleSpanProcessor({ exporter: new OTLPTraceExporter(otlpTarget("traces")) })],
});
const loggerProvider = new LoggerProvider({
  resource, processors: [new SimpleLogRecordProcessor({ exporter: new OTLPLogExporter(otlpTarget("logs")) })],
});
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(tracerProvider);
logs.setGlobalLoggerProvider(loggerProvider);
registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()], tracerProvider, loggerProvider });

const OpenAI = require("openai");  // after registerInstrumentations: the instrumentation patches it on require
const client = new OpenAI({ baseURL: process.env.PEER_OPENAI_BASE_URL, apiKey: "sk-fake-peer", maxRetries: 0 });
const [first, second] = scenario.questions;
let stream;
if (api === "chat") {
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
const method = api === "chat" ? "chat.completions" : "responses";
const calls = [`openai.${method}.create(model=${scenario.model})`,
  `openai.${method}.create(model=${scenario.model}, stream=true)`];
await report([tracerProvider, loggerProvider], ["@opentelemetry/instrumentation-openai", "openai",
  "@opentelemetry/sdk-trace", "@opentelemetry/sdk-logs", `@opentelemetry/exporter-trace-${exporters}`,
  `@opentelemetry/exporter-logs-${exporters}`], calls);
