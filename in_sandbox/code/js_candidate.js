// The candidate's process of JavaScript assert mode (issue 49; js_tests.js starts it): opens the two FIFOs,
// runs the candidate's code (solution.js) as a script in this node, says how each name the tests read
// crosses over (a function: called through a proxy; plain data: its value), then answers calls until the
// pipe closes: a name and plain arguments in, one plain value or the error's class and message out (the
// tagged JSON of js_tests.js). Nothing here is trusted: the tests' process believes only what it decodes.
"use strict";
const fs = require("fs");
const vm = require("vm");

const { encode, decode, sender, reader } = require("./rlvr_wire.js"); // js_wire.js

const req = fs.openSync("rlvr_req", "r");
const rep = fs.openSync("rlvr_rep", "w");
const send = sender(rep);
const next = reader(req, () => process.exit(0));

const describe = (e) => [e && e.constructor && typeof e.constructor.name === "string" ? e.constructor.name : "Error",
  String(e && e.message !== undefined ? e.message : e)];

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
