// The wire of JavaScript assert mode, loaded by both of its processes (js_tests.js, js_candidate.js): one JSON
// message a line over a FIFO, and the tagged JSON that carries plain data across (numbers including NaN and
// infinities, strings, booleans, null, undefined, bigints, arrays, plain objects, Maps and Sets; anything else
// is refused). The tests' process loads it before the candidate's process exists.
"use strict";
const fs = require("fs");

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
  if (proto === Object.prototype || proto === null) {
    return { $o: Object.keys(v).map((k) => [k, encode(v[k], depth + 1)]) };
  }
  throw new TypeError(`a ${t === "object" ? (v.constructor && v.constructor.name) || "object" : t} is not plain data`);
}

function decode(v, depth) {
  if (depth > MAX_DEPTH) throw new TypeError("containers nested too deep");
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) throw new TypeError("not an encoded value");
  if ("$n" in v) return Number(v.$n);
  if ("$u" in v) return undefined;
  if ("$b" in v) return BigInt(v.$b);
  if ("$a" in v) return v.$a.map((x) => decode(x, depth + 1));
  if ("$m" in v) return new Map(v.$m.map(([k, x]) => [decode(k, depth + 1), decode(x, depth + 1)]));
  if ("$s" in v) return new Set(v.$s.map((x) => decode(x, depth + 1)));
  if ("$o" in v) {
    const o = {};
    for (const [k, x] of v.$o) Object.defineProperty(o, String(k), { value: decode(x, depth + 1), enumerable: true, writable: true, configurable: true });
    return o;
  }
  throw new TypeError("not an encoded value");
}

// send(fd)(msg): write one message; reader(fd, ended)(): the next message read from fd (ended() at its end)
const sender = (fd) => (msg) => fs.writeSync(fd, JSON.stringify(msg) + "\n");

function reader(fd, ended) {
  const chunk = Buffer.alloc(1 << 16);
  let pending = Buffer.alloc(0);
  return function next() {
    for (;;) {
      const at = pending.indexOf(10);
      if (at >= 0) {
        const line = pending.subarray(0, at).toString("utf8");
        pending = pending.subarray(at + 1);
        return JSON.parse(line);
      }
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) return ended();
      pending = Buffer.concat([pending, chunk.subarray(0, n)]);
    }
  };
}

module.exports = { encode, decode, sender, reader };
