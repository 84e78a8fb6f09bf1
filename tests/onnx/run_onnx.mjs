// Runs an ONNX model in onnxruntime (npm onnxruntime-node, CPU), independent of Sparrow.
// Usage: node run_onnx.mjs REQUEST.json  where REQUEST is
//   {"model": "m.onnx", "inputs": {"u": {"dims": [T, 1], "data": [...]}, ...}}
// and prints {"outputs": {"y": {"dims": [...], "data": [...]}, ...}, "seconds": S} with every
// float64 input and output (JSON numbers round-trip doubles exactly).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ort = require("onnxruntime-node");

const request = JSON.parse(readFileSync(process.argv[2], "utf8"));
// onnxruntime's default graph optimizations, as a user's session has them.
const session = await ort.InferenceSession.create(request.model, {
  executionProviders: ["cpu"],
});
const feeds = {};
for (const [name, t] of Object.entries(request.inputs)) {
  feeds[name] = new ort.Tensor("float64", Float64Array.from(t.data), t.dims);
}
const start = process.hrtime.bigint();
const results = await session.run(feeds);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const outputs = {};
for (const [name, t] of Object.entries(results)) {
  outputs[name] = { type: t.type, dims: t.dims, data: Array.from(t.data) };
}
process.stdout.write(JSON.stringify({ outputs, seconds }));
