// A second client that no one on the ditto team wrote: the official `openai` npm package.
// Usage: BASE_URL=http://127.0.0.1:PORT/v1 node openai_client.mjs
// Prints one JSON object summarising what the client received; exits non-zero on any error.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "not-a-real-key", maxRetries: 0 });
const tools = JSON.parse(process.env.TOOLS);
const messages = JSON.parse(process.env.MESSAGES);
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => ({ id: m.id, owned_by: m.owned_by }));

const forced = await client.chat.completions.create({
  model: "sim-wobbly", seed: 5, messages, tools,
  tool_choice: { type: "function", function: { name: tools[0].function.name } },
});
out.forced = {
  finish_reason: forced.choices[0].finish_reason,
  tool_calls: forced.choices[0].message.tool_calls,
  usage: forced.usage,
  system_fingerprint: forced.system_fingerprint,
};

const again = await client.chat.completions.create({
  model: "sim-wobbly", seed: 5, messages, tools,
  tool_choice: { type: "function", function: { name: tools[0].function.name } },
});
out.repeat_identical = JSON.stringify(again) === JSON.stringify(forced);

const plan = await client.chat.completions.create({
  model: "sim-steady", seed: 5, temperature: 0,
  messages: [...messages, { role: "user", content: "Return your plan as JSON." }],
  response_format: { type: "json_schema", json_schema: { name: "plan", schema: JSON.parse(process.env.PLAN_SCHEMA), strict: true } },
});
out.plan = plan.choices[0].message.content;

try {
  await client.chat.completions.create({ model: "no-such-model", messages });
  out.error = null;
} catch (e) {
  out.error = { status: e.status, code: e.code, message: e.message };
}

console.log(JSON.stringify(out));
