-- One benchmark scenario for wrk, the same script for every server. Arguments after `--`:
--   METHOD PATH TOKEN [BODY]
-- Environment: BENCH_ADDRESSES=N > 0 makes each thread cycle through N distinct X-Forwarded-For
-- addresses from 198.18.0.0/15 (RFC 2544's benchmarking range; only a header, never a
-- destination), so anonymous requests stay under the per-address quota. Without it the request
-- is static: formatted once, and wrk spends no Lua per request (a dynamic request() roughly
-- halves what wrk can send, which would hide the bare server's real speed).
-- done() prints one JSON line that bench/lib/wrk.ts reads.

local addresses = tonumber(os.getenv("BENCH_ADDRESSES") or "0") or 0

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

function init(args)
  local method, path, token, body = args[1], args[2], args[3], args[4]
  if body == "" then body = nil end
  local headers = { ["Authorization"] = "Bearer " .. token }
  if body then headers["Content-Type"] = "application/json" end
  if addresses == 0 then
    wrk.method, wrk.path, wrk.body = method, path, body
    for name, value in pairs(headers) do wrk.headers[name] = value end
    return
  end
  for k = 0, addresses - 1 do
    headers["X-Forwarded-For"] = address(id * addresses + k)
    reqs[k + 1] = wrk.format(method, path, headers, body)
  end
  count = #reqs
end

if addresses > 0 then
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
