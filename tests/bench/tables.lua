-- Benchmark workload (tests/bench-launch.sh): tables, closures, string building and
-- sorting in Lua 5.4, as a game or configuration script would do.  Prints a checksum.
local seed = 1
local function rand(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return (seed >> 8) % n
end

local function make_item(i)
  return { id = i, name = "item" .. rand(10000), weight = rand(1000) / 10, tags = { rand(8), rand(8) } }
end

local items = {}
for i = 1, 200000 do items[i] = make_item(i) end

local by_name = {}
for _, it in ipairs(items) do
  local list = by_name[it.name]
  if not list then list = {}; by_name[it.name] = list end
  list[#list + 1] = it
end

table.sort(items, function(a, b)
  if a.weight ~= b.weight then return a.weight < b.weight end
  return a.id < b.id
end)

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local parts, sum, groups = {}, 0, 0
for name, list in pairs(by_name) do
  groups = groups + 1
  for _, it in ipairs(list) do sum = sum + it.tags[1] * it.tags[2] end
  if #list > 30 then parts[#parts + 1] = string.format("%s=%d", name, #list) end
end
table.sort(parts)
print(groups, sum, items[1].id, items[#items].id, #table.concat(parts, ","), fib(25))
