-- The plain data Lua's two assert-mode processes exchange (issue 49; lua_tests.lua and lua_candidate.lua load it).
-- A message is one value, framed as "<byte length>\n<bytes>"; a value is nil "z", a boolean "T" or "F", an integer
-- "i<digits>;", a float "f<%.17g>;" (nan and infinities too; it stays a float), a string "s<length>:<bytes>", a
-- table "t<pairs>:" then each key and its value. Anything else (a function, a coroutine, userdata, a table with a
-- metatable, one nested deeper than 200) is refused: it never crosses.
local MAX_DEPTH = 200
local mtype, fmt, sub, find, tonumber, tostring = math.type, string.format, string.sub, string.find, tonumber, tostring
local concat, getmetatable, pairs, type, error = table.concat, getmetatable, pairs, type, error
local wire = {}

local function enc(v, out, depth)
  if depth > MAX_DEPTH then error("containers nested too deep", 0) end
  local t = type(v)
  if v == nil then out[#out + 1] = "z"
  elseif t == "boolean" then out[#out + 1] = v and "T" or "F"
  elseif t == "number" then
    if mtype(v) == "integer" then out[#out + 1] = "i" .. fmt("%d", v) .. ";"
    else out[#out + 1] = "f" .. fmt("%.17g", v) .. ";" end
  elseif t == "string" then out[#out + 1] = "s" .. #v .. ":" .. v
  elseif t == "table" and getmetatable(v) == nil then
    local n = 0
    for _ in pairs(v) do n = n + 1 end
    out[#out + 1] = "t" .. n .. ":"
    for k, x in pairs(v) do
      enc(k, out, depth + 1)
      enc(x, out, depth + 1)
    end
  else error("a " .. t .. " is not plain data", 0) end
end

function wire.encode(v)
  local out = {}
  enc(v, out, 0)
  return concat(out)
end

local NONFINITE = { inf = math.huge, ["-inf"] = -math.huge, nan = 0 / 0, ["-nan"] = 0 / 0 }

local function dec(s, at, depth)
  if depth > MAX_DEPTH then error("containers nested too deep", 0) end
  local tag = sub(s, at, at)
  if tag == "z" then return nil, at + 1 end
  if tag == "T" then return true, at + 1 end
  if tag == "F" then return false, at + 1 end
  if tag == "i" or tag == "f" then
    local stop = find(s, ";", at, true)
    if not stop then error("not an encoded value", 0) end
    local text = sub(s, at + 1, stop - 1)
    local n = NONFINITE[text] or tonumber(text)
    if n == nil or (tag == "i" and mtype(n) ~= "integer") then error("not an encoded value", 0) end
    return tag == "f" and n + 0.0 or n, stop + 1
  end
  if tag == "s" or tag == "t" then
    local colon = find(s, ":", at, true)
    local n = colon and tonumber(sub(s, at + 1, colon - 1))
    if not n or mtype(n) ~= "integer" or n < 0 then error("not an encoded value", 0) end
    if tag == "s" then
      if colon + n > #s then error("not an encoded value", 0) end
      return sub(s, colon + 1, colon + n), colon + n + 1
    end
    local t, pos = {}, colon + 1
    for _ = 1, n do
      local k, x
      k, pos = dec(s, pos, depth + 1)
      x, pos = dec(s, pos, depth + 1)
      if k == nil or k ~= k then error("not an encoded value", 0) end
      t[k] = x
    end
    return t, pos
  end
  error("not an encoded value", 0)
end

function wire.decode(s)
  local v, stop = dec(s, 1, 0)
  if stop ~= #s + 1 then error("not an encoded value", 0) end
  return v
end

function wire.send(f, v)
  local s = wire.encode(v)
  f:write(#s, "\n", s)
  f:flush()
end

-- the next message, or nil where the other side closed its end
function wire.read(f)
  local n = f:read("n")
  if n == nil or mtype(n) ~= "integer" or n < 0 or f:read(1) ~= "\n" then return nil end
  local s = n == 0 and "" or f:read(n)
  if s == nil or #s ~= n then return nil end
  return wire.decode(s)
end

return wire
