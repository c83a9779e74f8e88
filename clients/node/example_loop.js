// An agent loop in Node.js over callgate, from the proto alone (no generated code): it sends
// each raw model response to SubmitProviderResponse, appends what callgate answers to the
// conversation, and when the run pauses (an approval, an unknown outcome) it waits on WatchRun
// for the settled turn. It never executes a tool itself: callgate decides and executes, and
// answers one result per call ID in the provider's own shape (provider_input_json).
//
//   node example_loop.js --target 127.0.0.1:50051 --token mia-demo-token --run my-run \
//        --provider anthropic.messages --conversation '[{"role":"user","content":"..."}]' \
//        --responses recorded.json [--max-turns 10] [--wait-s 60]
//
// `--responses` names recorded raw responses (a JSON array, or a directory of JSON files),
// replayed in order, so the example runs offline. For real use, replace `recordedModel` with a call to the provider's SDK, e.g.
//   const reply = await anthropic.messages.create({model, max_tokens, messages, tools});
//   return JSON.stringify(reply);
// It prints a JSON summary: the run state, each turn's next action, the results by call ID.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTO_ROOT = path.resolve(__dirname, "..", "..", "proto");
const PAUSED = new Set(["NEXT_ACTION_PAUSED_FOR_APPROVAL", "NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME"]);

function args(argv) {
  const out = { target: "127.0.0.1:50051", token: "", run: `node-loop-${Date.now()}`,
                provider: "anthropic.messages", conversation: "[]", responses: "",
                "max-turns": "10", "wait-s": "60" };
  for (let i = 2; i < argv.length; i += 2) out[argv[i].replace(/^--/, "")] = argv[i + 1];
  return out;
}

function loadService() {
  const def = protoLoader.loadSync("callgate/v1/gateway.proto", {
    includeDirs: [PROTO_ROOT], keepCase: true, enums: String, longs: Number, defaults: true,
  });
  return grpc.loadPackageDefinition(def).callgate.v1.ToolGateway;
}

// one unary call with a deadline, as a promise
function call(client, method, request, metadata, seconds = 30) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata, { deadline: Date.now() + seconds * 1000 },
      (err, reply) => (err ? reject(err) : resolve(reply)));
  });
}

// WatchRun until the run's latest outcome is no longer a pause (or the wait ends)
function settled(client, runId, metadata, seconds) {
  return new Promise((resolve, reject) => {
    const stream = client.WatchRun({ run_id: runId }, metadata,
      { deadline: Date.now() + seconds * 1000 });
    let last = null;
    stream.on("data", (outcome) => {
      last = outcome;
      if (!PAUSED.has(outcome.next)) { stream.cancel(); resolve(outcome); }
    });
    stream.on("error", (err) => (err.code === grpc.status.CANCELLED ? null
      : err.code === grpc.status.DEADLINE_EXCEEDED ? resolve(last) : reject(err)));
    stream.on("end", () => resolve(last));
  });
}

// an output item as an input item: null fields left out (the Responses API rejects them)
function withoutNulls(value) {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null)
    .map(([k, v]) => [k, withoutNulls(v)]));
}

// recorded responses: a JSON array in one file, or a directory of one JSON file per response
function recordedModel(where) {
  const responses = fs.statSync(where).isDirectory()
    ? fs.readdirSync(where).filter((f) => f.endsWith(".json")).sort()
      .map((f) => JSON.parse(fs.readFileSync(path.join(where, f), "utf8")))
    : JSON.parse(fs.readFileSync(where, "utf8"));
  let next = 0;
  return async (_conversation, _tools) => {
    if (next >= responses.length) throw new Error("no recorded response left");
    return JSON.stringify(responses[next++]);
  };
}

async function main() {
  const opts = args(process.argv);
  const ToolGateway = loadService();
  const client = new ToolGateway(opts.target, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  if (opts.token) md.add("authorization", `Bearer ${opts.token}`);
  const model = recordedModel(opts.responses);
  const summary = { turns: [], results: {} };
  try {
    let conversation = JSON.parse(opts.conversation);
    await call(client, "StartRun", { run_id: opts.run, provider: opts.provider,
      conversation_json: JSON.stringify(conversation),
      budget: { max_turns: Number(opts["max-turns"]) } }, md);
    const tools = JSON.parse((await call(client, "ListTools", { provider: opts.provider }, md))
      .tools_json);
    for (let turn = 1; turn <= Number(opts["max-turns"]); turn++) {
      const response = await model(conversation, tools);  // the model proposes
      let outcome = await call(client, "SubmitProviderResponse", {  // callgate decides, runs
        run_id: opts.run, response_json: response, turn_id: `turn-${turn}` }, md, 120);
      if (PAUSED.has(outcome.next)) {
        summary.turns.push(outcome.next);
        process.stderr.write(`waiting: ${outcome.next}\n`);  // a person or an outcome is due
        outcome = (await settled(client, opts.run, md, Number(opts["wait-s"]))) || outcome;
      }
      summary.turns.push(outcome.next);
      for (const r of outcome.results) summary.results[r.call_id] = r.status;
      if (outcome.next === "NEXT_ACTION_CONTINUE") {
        // Responses answers the function_call_output items only: resend the output first
        const own = opts.provider === "openai.responses" ? withoutNulls(JSON.parse(response)
          .output || []) : [];
        conversation = conversation.concat(own, JSON.parse(outcome.provider_input_json || "[]"));
      } else if (outcome.next !== "NEXT_ACTION_RETRY_TURN") {
        break;  // DONE, HANDOFF, BUDGET_EXHAUSTED, or still paused: the run says which
      }
    }
    summary.run_state = (await call(client, "GetRun", { run_id: opts.run }, md)).state;
  } catch (err) {
    summary.error = { code: grpc.status[err.code], details: err.details };
  } finally {
    client.close();
  }
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main();
