-- A luaunit-compatible module for Lua assert mode (issue 49), our own writing: what MultiPL-E's Lua tests use
-- (``lu = require('luaunit')``, ``lu.assertEquals(...)`` in global ``test*`` functions, then
-- ``os.exit(lu.LuaUnit.run())``). The assertions compare plain data by value (tables deeply); LuaUnit.run runs the
-- global functions named test* and the test* methods of global tables named Test*, in name order, each under
-- pcall, prints a summary and returns the number of tests that failed. ``counts`` (tests, asserts) is read by the
-- tests' process (lua_tests.lua), which loads this module before any candidate exists.
local M = { counts = { tests = 0, asserts = 0 } }
local fmt, type, pairs, tostring, error, pcall = string.format, type, pairs, tostring, error, pcall

local function show(v, depth)
  depth = depth or 0
  if type(v) == "string" then return fmt("%q", v) end
  if type(v) ~= "table" or depth > 4 then return tostring(v) end
  local parts, keys = {}, {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do parts[#parts + 1] = "[" .. show(k, depth + 1) .. "]=" .. show(v[k], depth + 1) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function equal(a, b, depth)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" or depth > 200 then return false end
  for k, x in pairs(a) do
    if not equal(x, b[k], depth + 1) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

local function fail(msg)
  error({ rlvr_failure = true, msg = msg }, 3)
end

local function check(ok, msg)
  M.counts.asserts = M.counts.asserts + 1
  if not ok then fail(msg) end
end

function M.assertEquals(actual, expected, msg)
  check(equal(actual, expected, 0), msg or ("expected: " .. show(expected) .. ", actual: " .. show(actual)))
end
function M.assertNotEquals(actual, expected, msg)
  check(not equal(actual, expected, 0), msg or ("values equal: " .. show(actual)))
end
function M.assertItemsEquals(actual, expected, msg)
  local function items(t)
    local out = {}
    for _, x in pairs(t) do out[#out + 1] = x end
    table.sort(out, function(a, b) return show(a) < show(b) end)
    return out
  end
  local ok = type(actual) == "table" and type(expected) == "table" and equal(items(actual), items(expected), 0)
  check(ok, msg or ("expected the items of " .. show(expected) .. ", actual: " .. show(actual)))
end
function M.assertAlmostEquals(actual, expected, margin, msg)
  margin = margin or 1e-11
  local ok = type(actual) == "number" and type(expected) == "number" and math.abs(actual - expected) <= margin
  check(ok, msg or fmt("expected %s within %s, actual: %s", tostring(expected), tostring(margin), tostring(actual)))
end
function M.assertTrue(v, msg) check(v == true, msg or ("expected true, actual: " .. show(v))) end
function M.assertFalse(v, msg) check(v == false, msg or ("expected false, actual: " .. show(v))) end
function M.assertEvalToTrue(v, msg) check(v, msg or ("expected a true value, actual: " .. show(v))) end
function M.assertEvalToFalse(v, msg) check(not v, msg or ("expected a false value, actual: " .. show(v))) end
function M.assertNil(v, msg) check(v == nil, msg or ("expected nil, actual: " .. show(v))) end
function M.assertNotNil(v, msg) check(v ~= nil, msg or "expected a value, actual: nil") end
function M.assertIs(a, b, msg) check(rawequal(a, b), msg or ("not the same: " .. show(a) .. ", " .. show(b))) end
function M.assertNotIs(a, b, msg) check(not rawequal(a, b), msg or ("the same: " .. show(a))) end
function M.assertIsNumber(v, msg) check(type(v) == "number", msg or ("expected a number: " .. show(v))) end
function M.assertIsString(v, msg) check(type(v) == "string", msg or ("expected a string: " .. show(v))) end
function M.assertIsTable(v, msg) check(type(v) == "table", msg or ("expected a table: " .. show(v))) end
function M.assertNaN(v, msg) check(v ~= v, msg or ("expected nan, actual: " .. show(v))) end
function M.assertStrContains(s, part, plain, msg)
  check(type(s) == "string" and s:find(part, 1, plain ~= false) ~= nil, msg or (show(s) .. " lacks " .. show(part)))
end
function M.assertError(f, ...)
  check(not pcall(f, ...), "expected an error")
end
function M.assertErrorMsgContains(part, f, ...)
  local ok, e = pcall(f, ...)
  check(not ok and tostring(type(e) == "table" and e.msg or e):find(part, 1, true) ~= nil, "expected an error with " .. show(part))
end
function M.fail(msg)
  M.counts.asserts = M.counts.asserts + 1
  fail(msg or "failure")
end
M.assert_equals, M.assert_true, M.assert_false, M.assert_nil = M.assertEquals, M.assertTrue, M.assertFalse, M.assertNil

local function tests_of(env)
  local found = {}
  for name, v in pairs(env) do
    if type(name) == "string" and type(v) == "function" and name:lower():sub(1, 4) == "test" then
      found[#found + 1] = { name, v }
    elseif type(name) == "string" and type(v) == "table" and name:sub(1, 4) == "Test" then
      for m, f in pairs(v) do
        if type(m) == "string" and type(f) == "function" and m:lower():sub(1, 4) == "test" then
          found[#found + 1] = { name .. "." .. m, function() return f(v) end }
        end
      end
    end
  end
  table.sort(found, function(a, b) return a[1] < b[1] end)
  return found
end

M.LuaUnit = {}
function M.LuaUnit.run()
  local failures = 0
  local all = tests_of(_G)
  for _, t in ipairs(all) do
    M.counts.tests = M.counts.tests + 1
    local ok, e = pcall(t[2])
    if not ok then
      failures = failures + 1
      io.stderr:write(fmt("%s failed: %s\n", t[1], tostring(type(e) == "table" and e.msg or e)))
    end
  end
  io.stdout:write(fmt("Ran %d tests, %d failures\n", #all, failures))
  return failures
end
M.LuaUnit.runSuite = M.LuaUnit.run
M.run = M.LuaUnit.run
return M
