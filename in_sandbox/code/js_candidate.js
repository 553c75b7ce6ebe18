// The candidate's process of JavaScript assert mode (issue 49; js_tests.js starts it): opens the two FIFOs,
// runs the candidate's code (solution.js) as a script in this node, says how each name the tests read
// crosses over (a function: called through a proxy; plain data: its value), then answers calls until the
// pipe closes: a name and plain arguments in, one plain value or the error's class and message out (the
// tagged JSON of js_tests.js). Nothing here is trusted: the tests' process believes only what it decodes.
"use strict";
const fs = require("fs");
const vm = require("vm");

const req = fs.openSync("rlvr_req", "r");
const rep = fs.openSync("rlvr_rep", "w");
const send = (msg) => fs.writeSync(rep, JSON.stringify(msg) + "\n");
const MAX_DEPTH = 200;

function encode(v, depth) {
  if (depth > MAX_DEPTH) throw new TypeError("containers nested too deep");
  const t = typeof v;
  if (v === null || t === "string" || t === "boolean") return v;
  if (t === "number") return Number.isFinite(v) ? v : { $n: String(v) };
  if (t === "undefined") return { $u: 1 };
  if (t === "bigint") return { $b: v.toString() };
  if (Array.isArray(v)) return { $a: Array.from(v, (x) => encode(x, depth + 1)) };
  if (v instanceof Map) return { $m: Array.from(v, ([k, x]) => [encode(k, depth + 1), encode(x, depth + 1)]) };
  if (v instanceof Set) return { $s: Array.from(v, (x) => encode(x, depth + 1)) };
  const proto = t === "object" ? Object.getPrototypeOf(v) : undefined;
  if (proto === Object.prototype || proto === null) return { $o: Object.keys(v).map((k) => [k, encode(v[k], depth + 1)]) };
  throw new TypeError(`a ${t} that is not plain data`);
}

function decode(v, depth) {
  if (depth > MAX_DEPTH) throw new TypeError("containers nested too deep");
  if (v === null || typeof v !== "object") return v;
  if ("$n" in v) return Number(v.$n);
  if ("$u" in v) return undefined;
  if ("$b" in v) return BigInt(v.$b);
  if ("$a" in v) return v.$a.map((x) => decode(x, depth + 1));
  if ("$m" in v) return new Map(v.$m.map(([k, x]) => [decode(k, depth + 1), decode(x, depth + 1)]));
  if ("$s" in v) return new Set(v.$s.map((x) => decode(x, depth + 1)));
  if ("$o" in v) return Object.fromEntries(v.$o.map(([k, x]) => [k, decode(x, depth + 1)]));
  throw new TypeError("not an encoded value");
}

const describe = (e) => [e && e.constructor && typeof e.constructor.name === "string" ? e.constructor.name : "Error",
  String(e && e.message !== undefined ? e.message : e)];

let pending = Buffer.alloc(0);
function next() {
  const chunk = Buffer.alloc(1 << 16);
  for (;;) {
    const at = pending.indexOf(10);
    if (at >= 0) {
      const line = pending.subarray(0, at).toString("utf8");
      pending = pending.subarray(at + 1);
      return JSON.parse(line);
    }
    const n = fs.readSync(req, chunk, 0, chunk.length, null);
    if (n === 0) process.exit(0);
    pending = Buffer.concat([pending, chunk.subarray(0, n)]);
  }
}

const hello = next();
globalThis.require = require; // the candidate's script may require node's modules (and the image's lodash)
globalThis.module = { exports: {} };
globalThis.exports = globalThis.module.exports; // a transpiled TypeScript module's exports
try {
  vm.runInThisContext(fs.readFileSync("solution.js", "utf8"), { filename: "solution.js" });
} catch (e) {
  console.error(e);
  send({ raise: describe(e) });
  process.exit(1);
}
const found = {};
const lookup = (n) => vm.runInThisContext(`typeof ${n} === "undefined" ? undefined : ${n}`);
for (const n of hello.names) {
  if (!/^[A-Za-z_$][\w$]*$/.test(n)) continue;
  let v;
  try {
    v = lookup(n);
  } catch (e) {
    continue;
  }
  if (typeof v === "function") found[n] = ["call"];
  else if (v !== undefined) {
    try {
      found[n] = ["value", encode(v, 0)];
    } catch (e) {}
  }
}
send({ names: found });
for (;;) {
  const msg = next();
  let value;
  try {
    value = encode(lookup(msg.call)(...decode(msg.args, 0)), 0);
  } catch (e) {
    send({ raise: describe(e) });
    continue;
  }
  send({ value });
}
