// A minimal agent-loop client in Node.js: it loads callgate's proto at run time (no generated
// code), starts a run, submits one model turn with two parallel reads, reads the run back and
// prints a JSON summary. The test suite runs it against a real sidecar.
//
//   node loop_client.js --target 127.0.0.1:50051 --token alice-demo-token --run my-run
//
// --mark says what the calls carry besides their arguments: "none" (the default: a client that
// never heard of `complete` or `partial`), "complete" (`complete: true`, as clients of the first
// proto sent it) or "partial" (`partial: true` on the weather call: a fragment, never run).
"use strict";

const path = require("node:path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTO_ROOT = path.resolve(__dirname, "..", "..", "proto");

function args(argv) {
  const out = { target: "127.0.0.1:50051", token: "", run: `node-${Date.now()}`, mark: "none" };
  for (let i = 2; i < argv.length; i += 2) out[argv[i].replace(/^--/, "")] = argv[i + 1];
  return out;
}

function loadService() {
  const def = protoLoader.loadSync("callgate/v1/gateway.proto", {
    includeDirs: [PROTO_ROOT], keepCase: true, enums: String, longs: Number, defaults: true,
  });
  return grpc.loadPackageDefinition(def).callgate.v1.ToolGateway;
}

function call(client, method, request, metadata) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata, { deadline: Date.now() + 30000 }, (err, reply) =>
      err ? reject(err) : resolve(reply));
  });
}

async function main() {
  const opts = args(process.argv);
  const ToolGateway = loadService();
  const client = new ToolGateway(opts.target, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  if (opts.token) md.add("authorization", `Bearer ${opts.token}`);
  const summary = {};
  try {
    const run = await call(client, "StartRun", { run_id: opts.run }, md);
    summary.run_state = run.state;
    const marks = { none: {}, complete: { complete: true }, partial: {} }[opts.mark];
    const outcome = await call(client, "SubmitTurn", {
      run_id: opts.run, turn_id: "node-turn-1",
      tool_request: { calls: [
        { call_id: "n_train", name: "get_train_status", ...marks,
          arguments_json: JSON.stringify({ train_number: "ICE123", date: "2026-12-01" }) },
        { call_id: "n_weather", name: "get_weather", ...marks,
          ...(opts.mark === "partial" ? { partial: true } : {}),
          arguments_json: JSON.stringify({ city: "Berlin", date: "2026-12-01" }) },
      ] },
    }, md);
    summary.next = outcome.next;
    summary.results = outcome.results.map((r) => ({
      call_id: r.call_id, status: r.status, output: r.output_json ? JSON.parse(r.output_json) : null,
      error: r.error ? r.error.code : "",
    }));
  } catch (err) {
    summary.error = { code: grpc.status[err.code], details: err.details };
  } finally {
    client.close();
  }
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main();
