-- The candidate's process of Lua assert mode (issue 49; lua_tests.lua starts it): opens the two FIFOs, runs the
-- candidate's code (solution.lua) in this lua, keeping the locals of its chunk as it returns (MultiPL-E's
-- ``local function f``), says which of the names the tests read it defines as functions, then answers calls until
-- the pipe closes: a name and plain arguments in, the plain values out, or the error's text (lua_wire.lua).
-- Nothing here is trusted: the tests' process believes only what it decodes.
local wire = dofile("rlvr_wire.lua")
local req = assert(io.open("rlvr_req", "rb"))
local rep = assert(io.open("rlvr_rep", "wb"))
local send, read, pack, unpack, pcall, type = wire.send, wire.read, table.pack, table.unpack, pcall, type
local getinfo, getlocal, sethook, tostring = debug.getinfo, debug.getlocal, debug.sethook, tostring

local hello = read(req)
if type(hello) ~= "table" then os.exit(0) end
local chunk, why = loadfile("solution.lua", "t")
if not chunk then
  io.stderr:write(why, "\n")
  send(rep, { raise = why })
  os.exit(1)
end
local locals = {}
sethook(function()
  if getinfo(2, "f").func ~= chunk then return end
  for i = 1, 250 do
    local name, v = getlocal(2, i)
    if name == nil then break end
    if type(v) == "function" then locals[name] = v end
  end
end, "r")
local ok, e = pcall(chunk)
sethook()
if not ok then
  io.stderr:write(tostring(e), "\n")
  send(rep, { raise = tostring(e) })
  os.exit(1)
end
local found = {}
for _, name in ipairs(type(hello.names) == "table" and hello.names or {}) do
  if type(name) == "string" then
    local f = locals[name] or rawget(_G, name)
    if type(f) == "function" then found[name] = "call"; locals[name] = f end
  end
end
send(rep, { names = found })
while true do
  local msg = read(req)
  if type(msg) ~= "table" then os.exit(0) end
  local f, args = locals[msg.call], msg.args
  local r = pack(pcall(function() return f(unpack(args, 1, args.n)) end))
  local reply
  if r[1] then
    reply = { value = pack(unpack(r, 2, r.n)) }
    if not pcall(wire.encode, reply) then reply = { raise = "a value that is not plain data" } end
  else
    reply = { raise = tostring(r[2]) }
  end
  send(rep, reply)
end
