// Two generateText calls with the Vercel AI SDK (`ai` + @ai-sdk/openai, chat API) and its
// experimental_telemetry on, exported by @opentelemetry/exporter-trace-otlp-proto (_peer.mjs).
// Argument `conversation`: the two questions as the turns of one chat, each call sent the turns before it
// (`messages`) and the chat's id as telemetry metadata (`metadata: { sessionId }`: ai.telemetry.metadata.sessionId).
import { require, scenario, tracerProvider, report } from "./_peer.mjs";

const { generateText } = require("ai");
const { createOpenAI } = require("@ai-sdk/openai");

const provider = tracerProvider();
const openai = createOpenAI({ baseURL: process.env.PEER_OPENAI_BASE_URL, apiKey: "sk-fake-peer" });
const conversation = process.argv[2] === "conversation";
const telemetry = { isEnabled: true, functionId: "billing-answer",
  ...(conversation ? { metadata: { sessionId: scenario.conversation } } : {}) };
const calls = [];
const messages = [];  // the chat so far (conversation)
for (const question of scenario.questions) {
  const input = conversation ? { messages: [...messages, { role: "user", content: question }] } : { prompt: question };
  const { response } = await generateText({
    model: openai.chat(scenario.model),
    system: scenario.system,
    ...input,
    experimental_telemetry: telemetry,
  });
  if (conversation) {
    messages.push({ role: "user", content: question }, ...response.messages);
  }
  calls.push(`ai.generateText(model=openai.chat(${scenario.model})${conversation ? ", messages=the chat so far, metadata.sessionId" : ""})`);
}
await report(provider, ["ai", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node", "@opentelemetry/exporter-trace-otlp-proto"], calls);
