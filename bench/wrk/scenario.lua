-- One benchmark scenario for wrk, the same script for every server. Arguments after `--`:
--   METHOD PATH TOKEN [BODY]
-- Environment:
--   BENCH_ADDRESSES=N > 0 makes each thread cycle through N distinct X-Forwarded-For addresses
--   from 198.18.0.0/15 (RFC 2544's benchmarking range; only a header, never a destination), so
--   anonymous requests stay under the per-address quota.
--   BENCH_RANDOM=MAX > 0 fills PATH's `{id}` with a random id in 1..MAX and its `{cursor}` with a
--   random cursor in 0..MAX-1 (base 36, as the product writes them), a new draw for each of
--   BENCH_POOL requests per thread (65536), cycled through: reads that no server's memo holds.
-- Either way the requests are formatted once, in init(); without both the request is static.
-- wrk then spends no Lua per request beyond picking the next one (drawing per request in
-- request() roughly halves what wrk can send, which would hide the faster servers' real speed).
-- done() prints one JSON line that bench/lib/wrk.ts reads.

local addresses = tonumber(os.getenv("BENCH_ADDRESSES") or "0") or 0
local random = tonumber(os.getenv("BENCH_RANDOM") or "0") or 0
local pool = tonumber(os.getenv("BENCH_POOL") or "65536") or 65536

local next_id = 0
function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end

local reqs = {}
local count = 0
local i = 0

local function address(n)
  local a = 18 * 65536 + n
  return string.format("198.%d.%d.%d", math.floor(a / 65536), math.floor(a / 256) % 256, a % 256)
end

local DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
local function base36(n)
  if n == 0 then return "0" end
  local s = ""
  while n > 0 do
    local d = n % 36
    s = DIGITS:sub(d + 1, d + 1) .. s
    n = math.floor(n / 36)
  end
  return s
end

local function drawn(path)
  path = path:gsub("{id}", function() return tostring(math.random(1, random)) end)
  return (path:gsub("{cursor}", function() return base36(math.random(0, random - 1)) end))
end

function init(args)
  local method, path, token, body = args[1], args[2], args[3], args[4]
  if body == "" then body = nil end
  local headers = { ["Authorization"] = "Bearer " .. token }
  if body then headers["Content-Type"] = "application/json" end
  if addresses == 0 and random == 0 then
    wrk.method, wrk.path, wrk.body = method, path, body
    for name, value in pairs(headers) do wrk.headers[name] = value end
    return
  end
  math.randomseed(os.time() * 1000 + id)
  local n = addresses > 0 and addresses or pool
  for k = 0, n - 1 do
    if addresses > 0 then headers["X-Forwarded-For"] = address(id * addresses + k) end
    reqs[k + 1] = wrk.format(method, random > 0 and drawn(path) or path, headers, body)
  end
  count = #reqs
end

if addresses > 0 or random > 0 then
  function request()
    i = i + 1
    if i > count then i = 1 end
    return reqs[i]
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"p50Us":%d,"p90Us":%d,"p99Us":%d,"maxUs":%d,"statusErrors":%d,"socketErrors":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, e.status, e.connect + e.read + e.write + e.timeout))
end
