// export.cjs sends agent traces and GenAI log events with the OpenTelemetry JS SDK's own OTLP
// exporters, as a Node.js agent would, so that the receiver's tests see what real clients send.
//
//   DITTO_PROTOCOL     grpc, http-proto or http-json: which exporters (traces and logs alike)
//   DITTO_ENDPOINT     the server's base URL (http://127.0.0.1:4318, or :4317 for grpc)
//   DITTO_TOKEN        bearer token
//   DITTO_TRACE_BYTE   two hex digits that start every trace id, so that runs of the protocols
//                      differ in their trace ids only
//
// Two traces are sent:
//   1. a GenAI semantic-conventions agent (invoke_agent, two chat spans, two execute_tool spans,
//      the second failing with an exception event) whose prompts and completions travel as
//      GenAI events on the logs signal, each carrying its chat span's context;
//   2. an OpenInference agent: an AGENT span around a call of the official `openai` client,
//      instrumented by @arizeai/openinference-instrumentation-openai, answered by a stand-in
//      OpenAI server on loopback started here (a tool call, a seed, a system fingerprint).
// Span times of trace 1 are fixed; trace 2's are the instrumentation's own.
"use strict";

const http = require("node:http");
const api = require("@opentelemetry/api");
const core = require("@opentelemetry/core");
const { AsyncLocalStorageContextManager } = require("@opentelemetry/context-async-hooks");
const { BasicTracerProvider, BatchSpanProcessor } = require("@opentelemetry/sdk-trace-base");
const { resourceFromAttributes } = require("@opentelemetry/resources");
const { LoggerProvider, BatchLogRecordProcessor } = require("@opentelemetry/sdk-logs");
const { OpenAIInstrumentation } = require("@arizeai/openinference-instrumentation-openai");

const protocol = process.env.DITTO_PROTOCOL || "http-proto";
const endpoint = (process.env.DITTO_ENDPOINT || "http://127.0.0.1:4318").replace(/\/$/, "");
const token = process.env.DITTO_TOKEN || "";
const traceByte = (process.env.DITTO_TRACE_BYTE || "a1").toLowerCase();

function exporters() {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  switch (protocol) {
    case "grpc": {
      const grpc = require("@grpc/grpc-js");
      const metadata = new grpc.Metadata();
      if (token) metadata.set("authorization", "Bearer " + token);
      const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-grpc");
      const { OTLPLogExporter } = require("@opentelemetry/exporter-logs-otlp-grpc");
      const opts = { url: endpoint, metadata, compression: "gzip", credentials: grpc.credentials.createInsecure() };
      return { traces: new OTLPTraceExporter(opts), logs: new OTLPLogExporter(opts) };
    }
    case "http-proto": {
      const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-proto");
      const { OTLPLogExporter } = require("@opentelemetry/exporter-logs-otlp-proto");
      return {
        traces: new OTLPTraceExporter({ url: endpoint + "/v1/traces", headers, compression: "gzip" }),
        logs: new OTLPLogExporter({ url: endpoint + "/v1/logs", headers, compression: "gzip" }),
      };
    }
    case "http-json": {
      const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-http");
      const { OTLPLogExporter } = require("@opentelemetry/exporter-logs-otlp-http");
      return {
        traces: new OTLPTraceExporter({ url: endpoint + "/v1/traces", headers }),
        logs: new OTLPLogExporter({ url: endpoint + "/v1/logs", headers }),
      };
    }
  }
  throw new Error("DITTO_PROTOCOL " + protocol + ": want grpc, http-proto or http-json");
}

// Ids: trace k of this process is <traceByte>00…0<k>; span ids count up from 1.
let nextTrace = 0;
let nextSpan = 0;
const idGenerator = {
  generateTraceId() {
    nextTrace++;
    return traceByte + "0".repeat(28) + nextTrace.toString(16).padStart(2, "0");
  },
  generateSpanId() {
    nextSpan++;
    return traceByte + nextSpan.toString(16).padStart(14, "0");
  },
};

// The stand-in OpenAI server: one chat completion asking for a tool call.
function fakeOpenAI() {
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const r = JSON.parse(body);
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({
        id: "chatcmpl-ditto-1", object: "chat.completion", created: 1764493200,
        model: "gpt-4o-mini-2024-07-18", system_fingerprint: "fp_ditto_0001",
        choices: [{
          index: 0, finish_reason: "tool_calls", logprobs: null,
          message: {
            role: "assistant", content: null,
            tool_calls: [{ id: "call_oi_1", type: "function", function: { name: "lookup_order", arguments: '{"order_id":"A-17"}' } }],
          },
        }],
        usage: { prompt_tokens: 57, completion_tokens: 18, total_tokens: 75 },
        _echo_seed: r.seed,
      }));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// An export the server refused (or that never reached it) fails the script: the SDK reports it
// to the global error handler and diag, not to the caller.
let exportFailed = false;
core.setGlobalErrorHandler((err) => {
  exportFailed = true;
  console.error("export error:", err && err.message ? err.message : String(err));
});
api.diag.setLogger(new api.DiagConsoleLogger(), api.DiagLogLevel.WARN);

async function main() {
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const { traces, logs } = exporters();
  const resource = resourceFromAttributes({ "service.name": "js-support-svc", "service.version": "r7" });
  const tp = new BasicTracerProvider({ resource, idGenerator, spanProcessors: [new BatchSpanProcessor(traces, { scheduledDelayMillis: 60000 })] });
  const lp = new LoggerProvider({ resource, processors: [new BatchLogRecordProcessor({ exporter: logs, scheduledDelayMillis: 60000 })] });
  const tracer = tp.getTracer("ditto-js-agent", "1.0.0");
  const logger = lp.getLogger("ditto-js-agent", "1.0.0");

  // 1. GenAI semantic conventions, fixed times.
  const t0 = Date.UTC(2026, 10, 30, 9, 0, 0);
  const at = (ms) => new Date(t0 + ms);
  const root = tracer.startSpan("invoke_agent refund-desk", {
    startTime: at(0),
    attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund-desk", "gen_ai.request.model": "gpt-4o-mini" },
  });
  const rctx = api.trace.setSpan(api.context.active(), root);
  const chat = (from, i, finish, toolCalls) => {
    const s = tracer.startSpan("chat gpt-4o-mini", {
      kind: api.SpanKind.CLIENT, startTime: at(from),
      attributes: {
        "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18", "gen_ai.request.temperature": 0.2, "gen_ai.request.top_p": 0.9,
        "gen_ai.request.seed": 1234, "gen_ai.openai.response.system_fingerprint": "fp_js_0042",
        "gen_ai.response.finish_reasons": [finish], "gen_ai.usage.input_tokens": 120 + i, "gen_ai.usage.output_tokens": 12 + i,
        "gen_ai.response.id": "resp-" + i,
      },
    }, rctx);
    const sctx = api.trace.setSpan(rctx, s);
    // The GenAI events of this call, on the logs signal, in the span's context.
    logger.emit({ eventName: "gen_ai.system.message", context: sctx, timestamp: at(from), attributes: { "gen_ai.system": "openai" },
      body: { content: "You handle refunds." } });
    logger.emit({ eventName: "gen_ai.user.message", context: sctx, timestamp: at(from), attributes: { "gen_ai.system": "openai" },
      body: { content: "Refund order A-" + i } });
    if (i > 1) {
      logger.emit({ eventName: "gen_ai.tool.message", context: sctx, timestamp: at(from), attributes: { "gen_ai.system": "openai" },
        body: { id: "call_js_" + (i - 1), content: '{"status":"shipped"}' } });
    }
    const message = toolCalls
      ? { tool_calls: toolCalls.map(([id, name, args]) => ({ id, type: "function", function: { name, arguments: args } })) }
      : { content: "Refund issued." };
    logger.emit({ eventName: "gen_ai.choice", context: sctx, timestamp: at(from + 10), attributes: { "gen_ai.system": "openai" },
      body: { index: 0, finish_reason: finish, message } });
    s.end(at(from + 10));
  };
  const tool = (from, name, id, args, result, err) => {
    const s = tracer.startSpan("execute_tool " + name, {
      startTime: at(from),
      attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": id, "gen_ai.tool.call.arguments": args },
    }, rctx);
    if (err) {
      // An Error's stack names this machine's paths: a fixed one keeps the recordings free of them.
      const e = new Error(err);
      e.stack = "Error: " + err + "\n    at tool (export.cjs)";
      s.recordException(e, at(from + 5));
      s.setStatus({ code: api.SpanStatusCode.ERROR });
    } else {
      s.setAttribute("gen_ai.tool.call.result", result);
    }
    s.end(at(from + 5));
  };
  chat(10, 1, "tool_calls", [["call_js_1", "order_status", '{"order":"A-1"}']]);
  tool(25, "order_status", "call_js_1", '{"order":"A-1"}', '{"status":"shipped"}');
  chat(40, 2, "tool_calls", [["call_js_2", "issue_refund", '{"order":"A-1","amount":20}']]);
  tool(55, "issue_refund", "call_js_2", '{"order":"A-1","amount":20}', null, "payment gateway timeout");
  root.end(at(100));

  // 2. OpenInference: an AGENT span around an instrumented OpenAI client call.
  const server = await fakeOpenAI();
  const instr = new OpenAIInstrumentation();
  instr.setTracerProvider(tp);
  const OpenAI = require("openai"); // after the instrumentation exists, as its docs ask
  instr.manuallyInstrument(OpenAI);
  const client = new OpenAI({ apiKey: "sk-test-not-a-key", baseURL: "http://127.0.0.1:" + server.address().port + "/v1" });
  const agent = tracer.startSpan("support-agent", { attributes: { "openinference.span.kind": "AGENT", "input.value": "Where is order A-17?" } });
  await api.context.with(api.trace.setSpan(api.context.active(), agent), () =>
    client.chat.completions.create({
      model: "gpt-4o-mini", seed: 7, temperature: 0, top_p: 1,
      messages: [{ role: "system", content: "You track orders." }, { role: "user", content: "Where is order A-17?" }],
      tools: [{ type: "function", function: { name: "lookup_order", parameters: { type: "object", properties: { order_id: { type: "string" } } } } }],
    }));
  agent.setAttribute("output.value", "Order A-17 is on its way.");
  agent.end();
  server.close();

  // Traces first, then logs: a logs exporter may well flush after the trace exporter.
  await tp.forceFlush();
  await lp.forceFlush();
  await tp.shutdown();
  await lp.shutdown();
  if (exportFailed) process.exit(1);
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
