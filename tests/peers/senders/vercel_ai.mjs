// Two generateText calls with the Vercel AI SDK (`ai` + @ai-sdk/openai, chat API) and its
// experimental_telemetry on, exported by @opentelemetry/exporter-trace-otlp-proto (_peer.mjs).
import { require, scenario, tracerProvider, report } from "./_peer.mjs";

const { generateText } = require("ai");
const { createOpenAI } = require("@ai-sdk/openai");

const provider = tracerProvider();
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
await report(provider, ["ai", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node", "@opentelemetry/exporter-trace-otlp-proto"], calls);
