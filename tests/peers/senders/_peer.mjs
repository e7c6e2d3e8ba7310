// What the Node senders share (as _peer.py does for the Python ones): the scenario, the OTLP/HTTP protobuf
// exporter and the report. Run with PEER_NODE_MODULES at the family's node_modules; the scenario (system
// prompt, questions, model, tool) comes as JSON in PEER_SCENARIO so it stays defined once, in _peer.py.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

export const require = createRequire(path.join(process.env.PEER_NODE_MODULES, "noop.js"));
export const scenario = JSON.parse(process.env.PEER_SCENARIO);

// Where an OTLP exporter sends `signal` ("traces" or "logs"): PEER_OTLP_ENDPOINT with PEER_OTLP_HEADERS.
export function otlpTarget(signal) {
  const headers = Object.fromEntries(
    (process.env.PEER_OTLP_HEADERS || "").split(",").filter((p) => p.includes("=")).map((p) => p.split(/=(.*)/s).slice(0, 2)),
  );
  return { url: process.env.PEER_OTLP_ENDPOINT.replace(/\/$/, "") + `/v1/${signal}`, headers };
}

// A NodeTracerProvider exporting to otlpTarget("traces"), registered as the global one.
export function tracerProvider() {
  const { NodeTracerProvider, SimpleSpanProcessor } = require("@opentelemetry/sdk-trace-node");
  const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-proto");
  const { resourceFromAttributes } = require("@opentelemetry/resources");
  const exporter = new OTLPTraceExporter(otlpTarget("traces"));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": scenario.service }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  provider.register();
  return provider;
}

// Flush every provider (the export must be on the wire before we exit), then tell the orchestrator the versions
// and calls.
export async function report(providers, packageNames, calls) {
  for (const provider of [providers].flat()) {
    await provider.forceFlush();
    await provider.shutdown();
  }
  const packages = {};
  for (const name of packageNames) {
    packages[name] = JSON.parse(fs.readFileSync(path.join(process.env.PEER_NODE_MODULES, name, "package.json"))).version;
  }
  console.log(JSON.stringify({ packages, calls }));
}
