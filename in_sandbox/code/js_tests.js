// The tests' process of JavaScript assert mode (issue 49): runs in the toolchain sandbox, never in the service.
//
// Started as a copy of node that its own user cannot read (chmod 100): the kernel then makes the process
// non-dumpable, so the candidate's process (same uid) cannot open its /proc files (descriptors, memory,
// environment) or ptrace it. It reads the sentinel (rlvr_nonce) and the tests (rlvr_tests.js) and deletes
// both before the candidate's process exists; starts that process (js_candidate.js: the candidate's code,
// in a node of its own, stdout going to stderr) and talks to it over two FIFOs; binds every name the tests
// read that the candidate defines (and node's globals do not) to a proxy that sends plain data and gets plain
// data back (js_wire.js's tagged JSON, loaded here before the candidate's process exists); runs the tests with a
// require whose assert counts its calls; and writes on its own stdout, which the candidate cannot reach, the
// sentinel and what ran. A failed assertion exits 1 saying "Test failed"; the candidate's process
// ending before the tests finished exits 0 without the sentinel (never a pass).
"use strict";
const fs = require("fs");
const vm = require("vm");
const cp = require("child_process");
const { encode, decode, sender, reader } = require("./rlvr_wire.js"); // js_wire.js

const sentinel = fs.readFileSync("rlvr_nonce", "utf8").trim();
const tests = fs.readFileSync("rlvr_tests.js", "utf8");
fs.unlinkSync("rlvr_nonce");
fs.unlinkSync("rlvr_tests.js");
if (fs.existsSync("rlvr_tests.ts")) fs.unlinkSync("rlvr_tests.ts"); // TypeScript's tests, before transpiling
const ran = { tests: 1, asserts: 0, calls: 0 };

function ended() {
  process.stderr.write("\nthe candidate's program ended before the tests finished\n");
  process.exit(0); // exit 0 without the sentinel: never a pass (code.early_exit)
}

cp.execFileSync("mkfifo", ["rlvr_req", "rlvr_rep"]);
const child = cp.spawn(process.argv[2] || "node", ["rlvr_candidate.js"], { stdio: ["ignore", 2, 2] });
child.unref();
const req = fs.openSync("rlvr_req", "w");
const rep = fs.openSync("rlvr_rep", "r");
const send = sender(req);
const next = reader(rep, ended);

function ask(msg) {
  try {
    send(msg);
  } catch (e) {
    ended();
  }
  return next();
}

const ERRORS = { Error, TypeError, RangeError, ReferenceError, SyntaxError, EvalError, URIError };

function proxy(name) {
  const call = function (...args) {
    ran.calls += 1;
    const reply = ask({ call: name, args: encode(args, 0) });
    if ("value" in reply) {
      if (JSON.stringify(reply.value).includes('{"$n":')) ran.nonfinite = 1; // NaN or an infinity: a signal
      return decode(reply.value, 0);
    }
    const [cls, message] = Array.isArray(reply.raise) ? reply.raise : ["Error", "an unreadable answer"];
    throw new (ERRORS[cls] || Error)(String(message));
  };
  Object.defineProperty(call, "name", { value: name });
  return call;
}

// the names the tests read that node's globals do not define: the candidate's, if it defines them
const KEYWORDS = new Set(("break case catch class const continue debugger default delete do else export extends false " +
  "finally for function if import in instanceof new null return super switch this throw true try typeof var void " +
  "while with yield let static await async of require module exports").split(" "));
const wanted = [...new Set(tests.match(/[A-Za-z_$][\w$]*/g) || [])].filter((n) => !KEYWORDS.has(n) && !(n in globalThis));
const hello = ask({ names: wanted });
if (!hello.names) {
  process.stderr.write(`${hello.raise ? hello.raise.join(": ") : "the candidate's code failed"}\n`);
  process.exit(1);
}
for (const [n, kind] of Object.entries(hello.names)) {
  if (!wanted.includes(n)) continue;
  if (kind[0] === "call") globalThis[n] = proxy(n);
  else if (kind[0] === "value") globalThis[n] = decode(kind[1], 0);
}

// node:assert, counting: the tests' require("assert") gets this one
const realAssert = require("assert");
function counted(f) {
  return function (...a) {
    ran.asserts += 1;
    return f.apply(this, a);
  };
}
const assertMod = counted(realAssert);
for (const k of Object.keys(realAssert)) assertMod[k] = typeof realAssert[k] === "function" && k !== "AssertionError" ? counted(realAssert[k]) : realAssert[k];
assertMod.strict = assertMod;
const testsRequire = (m) => (["assert", "node:assert", "assert/strict", "node:assert/strict"].includes(m) ? assertMod : require(m));
console.assert = function (c, ...m) {
  ran.asserts += 1;
  if (!c) throw new realAssert.AssertionError({ message: "Assertion failed" + (m.length ? ": " + m.join(" ") : "") });
};
if (!("assert" in globalThis)) globalThis.assert = assertMod;

let fn;
try {
  fn = vm.runInThisContext(`(function (require, module, exports) {\n${tests}\n})`, { filename: "tests.js", lineOffset: -1 });
} catch (e) {
  process.stdout.write(`\n${sentinel}:bad_reference:${JSON.stringify(String(e))}\n`);
  process.exit(0); // exit 0: the driver keeps the stdout of a run that ended well
}
try {
  fn(testsRequire, { exports: {} }, {});
} catch (e) {
  const failed = e instanceof realAssert.AssertionError || (e && e.code === "ERR_ASSERTION");
  const missing = e instanceof ReferenceError && wanted.some((n) => String(e.message).startsWith(`${n} is not defined`));
  if (!failed && !missing && ran.calls === 0) { // the tests' own error before any call: not the candidate's
    process.stdout.write(`\n${sentinel}:bad_reference:${JSON.stringify(String((e && e.stack) || e))}\n`);
    process.exit(0);
  }
  process.stderr.write(`${(e && e.stack) || e}\n${failed ? "Test failed: an assertion failed\n" : ""}`);
  process.exit(1);
}
process.stdout.write(`\n${sentinel}\n${sentinel}:ran:${JSON.stringify(ran)}\n`);
process.exit(0);
