-- The tests' process of Lua assert mode (issue 49): runs in the toolchain sandbox, never in the service.
--
-- Started as a copy of lua5.4 that its own user cannot read (chmod 100): the kernel makes the process
-- non-dumpable, so the candidate's process (same uid) cannot open its /proc files or ptrace it. It reads the
-- sentinel (rlvr_nonce), the tests (rlvr_tests.lua) and our luaunit (rlvr_luaunit.lua), deletes the first two,
-- makes require("luaunit") ours and require() search only the system's directories (nothing the candidate could
-- plant), then starts the candidate's process (lua_candidate.lua: the candidate's code in a lua of its own, its
-- stdout going to stderr) and talks to it over two FIFOs with plain data (lua_wire.lua). Every global the tests
-- read that the candidate defines as a function (global, or local to its chunk) is a function here that crosses
-- over; the tests run in this pristine lua, assert() and luaunit's assertions counted; an os.exit of the tests
-- ends them (0 or true: their end; else a failure). The sentinel and what ran go on this process's stdout, which
-- the candidate cannot reach. A failed test exits 1 saying "Test failed"; the tests' own error before any call
-- into the candidate prints ``{sentinel}:bad_reference:...``; the candidate's process ending early exits 0
-- without the sentinel (never a pass).
local wire = dofile("rlvr_wire.lua")
local luaunit = dofile("rlvr_luaunit.lua")
local function slurp(name)
  local f = assert(io.open(name, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
local sentinel = slurp("rlvr_nonce"):gsub("%s+$", "")
local tests = slurp("rlvr_tests.lua")
os.remove("rlvr_nonce")
os.remove("rlvr_tests.lua")
package.preload.luaunit = function() return luaunit end
package.path = "/usr/local/share/lua/5.4/?.lua;/usr/local/share/lua/5.4/?/init.lua;/usr/share/lua/5.4/?.lua;/usr/share/lua/5.4/?/init.lua"
package.cpath = "/usr/local/lib/lua/5.4/?.so;/usr/lib/x86_64-linux-gnu/lua/5.4/?.so;/usr/lib/lua/5.4/?.so"
local real_exit, stdout, stderr, fmt = os.exit, io.stdout, io.stderr, string.format
local ran = { tests = 1, asserts = 0, calls = 0 }

local function ended()
  stderr:write("\nthe candidate's program ended before the tests finished\n")
  real_exit(0, true) -- exit 0 without the sentinel: never a pass (code.early_exit)
end
local function quoted(s) -- one line
  return (fmt("%q", s):gsub("\\\n", "\\n"))
end
local function say(what)
  stdout:write("\n", sentinel, ":", what, "\n")
  stdout:flush()
  real_exit(0, true) -- exit 0: the driver keeps the stdout of a run that ended well
end

assert(os.execute("mkfifo rlvr_req rlvr_rep"), "mkfifo failed")
assert(os.execute("lua5.4 rlvr_candidate.lua </dev/null 1>&2 &"), "cannot start the candidate's process")
local req = assert(io.open("rlvr_req", "wb"))
local rep = assert(io.open("rlvr_rep", "rb"))

local function ask(msg)
  if not pcall(wire.send, req, msg) then ended() end
  local ok, reply = pcall(wire.read, rep)
  if not ok or type(reply) ~= "table" then ended() end
  return reply
end

local function call(name, ...)
  ran.calls = ran.calls + 1
  local reply = ask({ call = name, args = table.pack(...) })
  if type(reply.value) == "table" then
    local v = reply.value
    for i = 1, (math.type(v.n) == "integer" and v.n or 0) do
      if type(v[i]) == "number" and (v[i] ~= v[i] or v[i] == math.huge or v[i] == -math.huge) then ran.nonfinite = 1 end
    end
    return table.unpack(v, 1, math.type(v.n) == "integer" and v.n or #v)
  end
  error(type(reply.raise) == "string" and reply.raise or "an unreadable answer", 2)
end

-- the names the tests read that this lua does not define: the candidate's, if it defines them as functions
local KEYWORDS = {}
for k in ("and break do else elseif end false for function goto if in local nil not or repeat return then true " ..
          "until while self"):gmatch("%a+") do KEYWORDS[k] = true end
local wanted, seen = {}, {}
for pre, name in tests:gmatch("([%.:]?)([%a_][%w_]*)") do
  if pre == "" and not KEYWORDS[name] and _G[name] == nil and not seen[name] then
    seen[name] = true
    wanted[#wanted + 1] = name
  end
end
local hello = ask({ names = wanted })
if type(hello.names) ~= "table" then
  stderr:write(type(hello.raise) == "string" and hello.raise or "the candidate's code failed", "\n")
  real_exit(1, true)
end
for _, name in ipairs(wanted) do
  if hello.names[name] == "call" then _G[name] = function(...) return call(name, ...) end end
end

-- what the tests call to check, counted; their os.exit ends them, not this process
local real_assert = assert
_G.assert = function(v, ...)
  ran.asserts = ran.asserts + 1
  return real_assert(v, ...)
end
local EXIT = {}
os.exit = function(code) error({ [EXIT] = true, code = code == nil and true or code }, 0) end

local chunk, why = load(tests, "=tests.lua", "t")
if not chunk then say("bad_reference:" .. quoted(why)) end
local ok, e = xpcall(chunk, function(err)
  return type(err) == "table" and err[EXIT] and err or { message = tostring(type(err) == "table" and err.msg or err),
    trace = debug.traceback(tostring(type(err) == "table" and err.msg or err), 2), failure = type(err) == "table" and err.rlvr_failure }
end)
if not ok and not e[EXIT] then
  local missing = false
  for _, name in ipairs(wanted) do
    if e.message:find("global '" .. name .. "'", 1, true) then missing = true end
  end
  local failed = e.failure or e.message:find("assertion failed", 1, true)
  if not failed and not missing and ran.calls == 0 then say("bad_reference:" .. quoted(e.trace)) end
  stderr:write(e.trace, "\nTest failed: ", e.message, "\n")
  real_exit(1, true)
end
if not ok and not (e.code == 0 or e.code == true) then
  stderr:write(fmt("Test failed: the tests exited with status %s\n", tostring(e.code)))
  real_exit(1, true)
end
if luaunit.counts.tests > 0 then ran.tests = luaunit.counts.tests end
ran.asserts = ran.asserts + luaunit.counts.asserts
local parts = {}
for _, k in ipairs({ "tests", "asserts", "calls", "nonfinite" }) do
  if ran[k] then parts[#parts + 1] = fmt('"%s":%d', k, ran[k]) end
end
stdout:write("\n", sentinel, "\n")
say("ran:{" .. table.concat(parts, ",") .. "}")
