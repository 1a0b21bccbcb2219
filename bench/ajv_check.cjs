// The TypeScript client's output-schema check, timed, for bench_gopher.py.
//
//   node bench/ajv_check.cjs CASES.json
//
// CASES.json: {"reps": N, "cases": [{"label", "schemas": {name: schema},
// "data": structuredContent, "reps"?}]}.  For every case and schema it builds
// an Ajv instance exactly as @modelcontextprotocol/sdk's default
// AjvJsonSchemaValidator does (strict false, validateFormats, no
// validateSchema, allErrors, ajv-formats), compiles the schema once (timed)
// and validates the data N times after a warm-up.  It prints one JSON
// object: {"ajv": version, "cases": {label: {name: {"compile_ms",
// "median_us", "valid"}}}}.  Modules are found through NODE_PATH
// (.ci/node_modules); nothing here touches the network.
"use strict";
const fs = require("fs");
const Ajv = require("ajv").default;
const addFormats = require("ajv-formats").default;

function sdkAjv() {
  const ajv = new Ajv({
    strict: false,
    validateFormats: true,
    validateSchema: false,
    allErrors: true,
  });
  addFormats(ajv);
  return ajv;
}

function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = { ajv: require("ajv/package.json").version, cases: {} };
for (const c of spec.cases) {
  const reps = c.reps || spec.reps;
  const row = {};
  for (const [name, schema] of Object.entries(c.schemas)) {
    const ajv = sdkAjv();
    let t0 = process.hrtime.bigint();
    const validate = ajv.compile(schema);
    const compileMs = Number(process.hrtime.bigint() - t0) / 1e6;
    let valid = true;
    for (let i = 0; i < Math.min(20, reps); i++) valid = validate(c.data) && valid;
    const samples = [];
    for (let i = 0; i < reps; i++) {
      t0 = process.hrtime.bigint();
      valid = validate(c.data) && valid;
      samples.push(Number(process.hrtime.bigint() - t0) / 1e3);
    }
    row[name] = {
      compile_ms: compileMs,
      median_us: median(samples),
      valid: valid,
      errors: valid ? null : ajv.errorsText(validate.errors),
    };
  }
  out.cases[c.label] = row;
}
process.stdout.write(JSON.stringify(out) + "\n");
