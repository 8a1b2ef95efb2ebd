-- The bench's mixed and write-only scenarios (bench/lib/mixed.ts). Arguments after `--`: TOKEN.
-- Environment:
--   BENCH_MIX: weights of the request kinds, e.g. "list=45,get=45,patch=5,place=2.5,close=2.5":
--     list   GET /v1/pets?limit=20 (the list scenario's page)
--     get    GET /v1/pets/{id}, a random pet of the file's `tag` pets (its ETag is noted)
--     patch  PATCH /v1/pets/{id} of a `tag` pet not already being changed, its name only, with
--            If-Match of the pet's newest ETag seen (from a GET or the last PATCH's answer)
--     place  POST /v1/store/orders for a pet the file or a cancel gave as available
--     close  POST /v1/store/orders/{id}/cancel or /complete (in turns) of an order placed by
--            this run or listed in the file; a cancel gives its pet back for a place
--   BENCH_MIX_FILE: what the harness read from the server before the run, a line each:
--     "tag ID ETAG", "pet ID" (available), "order ID" (placed).
-- A write with nothing to work on (no pet left to place, no order to close, every tagged pet
-- being changed) is sent as a list instead and counted in done()'s `fallbacks`.
-- Responses are told apart by their bodies: a pet `{"id":N,...`, an order `{"id":"ord_...`; a
-- pet's GET answer carries `Deprecation`, its PATCH answer does not.

local token
local kinds, weights, total = {}, {}, 0
local list_req
local get_reqs, tag_ids = {}, {}
local tags, versions, busy = {}, {}, {}
local ready, free, orders = {}, {}, {}
local closes = 0
-- A global, not a local: done() reads it from each thread with thread:get, which sees only globals.
fallbacks = 0
local places = false

local function push(t, v) t[#t + 1] = v end
local function pop(t)
  local n = #t
  if n == 0 then return nil end
  local v = t[n]
  t[n] = nil
  return v
end

local json_headers
function init(args)
  token = args[1]
  local auth = { ["Authorization"] = "Bearer " .. token }
  json_headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
  list_req = wrk.format("GET", "/v1/pets?limit=20", auth)
  for kind, weight in string.gmatch(os.getenv("BENCH_MIX") or "list=100", "(%a+)=([%d.]+)") do
    total = total + tonumber(weight)
    if kind == "place" then places = true end
    push(kinds, kind)
    push(weights, total)
  end
  local file = os.getenv("BENCH_MIX_FILE")
  if file and file ~= "" then
    for line in io.lines(file) do
      local kind, a, b = line:match("^(%a+) (%S+) ?(%S*)$")
      if kind == "tag" then
        local id = tonumber(a)
        push(tag_ids, id)
        tags[id] = b
        versions[id] = tonumber(b:match("-(%d+)")) or 0
        push(ready, id)
        get_reqs[id] = wrk.format("GET", "/v1/pets/" .. id, auth)
      elseif kind == "pet" then
        push(free, tonumber(a))
      elseif kind == "order" then
        push(orders, a)
      end
    end
  end
  math.randomseed(os.time())
  -- Shuffled, so that two runs do not change the same pets first.
  for i = #ready, 2, -1 do
    local j = math.random(i)
    ready[i], ready[j] = ready[j], ready[i]
  end
end

local function fallback()
  fallbacks = fallbacks + 1
  return list_req
end

local function patch()
  local id = pop(ready)
  if id == nil then return fallback() end
  busy[id] = true
  local headers = {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/merge-patch+json",
    ["If-Match"] = tags[id],
  }
  return wrk.format("PATCH", "/v1/pets/" .. id, headers, '{"name":"Mixed ' .. math.random(1000) .. '"}')
end

local function place()
  local pet = pop(free)
  if pet == nil then return fallback() end
  return wrk.format("POST", "/v1/store/orders", json_headers, '{"petId":' .. pet .. '}')
end

local function close()
  local order = pop(orders)
  if order == nil then return nil end
  closes = closes + 1
  local verb = closes % 2 == 0 and "complete" or "cancel"
  return wrk.format("POST", "/v1/store/orders/" .. order .. "/" .. verb, json_headers)
end

function request()
  local r = math.random() * total
  local kind = kinds[#kinds]
  for i = 1, #weights do
    if r < weights[i] then
      kind = kinds[i]
      break
    end
  end
  if kind == "list" then return list_req end
  if kind == "get" then
    local id = tag_ids[math.random(#tag_ids)]
    return id and get_reqs[id] or fallback()
  end
  if kind == "patch" then return patch() end
  -- With no order open, the mix places one; the close scenario alone has none to place.
  if kind == "close" then return close() or (places and place() or fallback()) end
  return place()
end

function response(status, headers, body)
  local first = body:byte(1)
  if first ~= 123 then return end -- not an object: a page, or nothing
  local order, pet, state = body:match('^{"id":"(ord_[^"]+)","petId":(%d+),"status":"(%a+)"')
  if order then
    if status == 201 then
      push(orders, order)
    elseif status == 200 and state == "cancelled" then
      push(free, tonumber(pet))
    end
    return
  end
  local id = tonumber(body:match('^{"id":(%d+),'))
  local tag = headers["ETag"] or headers["etag"]
  if id == nil or tag == nil or tags[id] == nil then return end
  local version = tonumber(tag:match("-(%d+)")) or 0
  if version > versions[id] then
    versions[id] = version
    tags[id] = tag
  end
  -- The PATCH's own answer frees its pet for the next change.
  if busy[id] and headers["Deprecation"] == nil and headers["deprecation"] == nil then
    busy[id] = nil
    push(ready, id)
  end
end

local threads = {}
function setup(thread)
  push(threads, thread)
end

function done(summary, latency, requests)
  local e = summary.errors
  local fell = 0
  for _, t in ipairs(threads) do fell = fell + (t:get("fallbacks") or 0) end
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"p50Us":%d,"p90Us":%d,"p99Us":%d,"maxUs":%d,"statusErrors":%d,"socketErrors":%d,"fallbacks":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, e.status, e.connect + e.read + e.write + e.timeout, fell))
end
