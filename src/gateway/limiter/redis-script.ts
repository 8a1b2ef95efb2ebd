/**
 * The shared limiter's decision as one Lua script, run atomically by Redis once per request: it
 * does for one subject what `SlidingWindowLimiter.decide` does, with the same windows, buckets,
 * refusal counting and ban (see the top of `memory.ts`), so both give the same Decision for
 * the same requests at the same times (`redis.test.ts` replays one sequence into both).
 *
 * State: one string per subject, a MessagePack array with a TTL:
 *   {version, latest time seen, banned until (epoch ms, 0: not banned),
 *    minute offset, minute buckets, day offset, day buckets, refusal offset, refusal buckets}
 * Each window's buckets are a flat list of (bucket number, count) pairs, oldest first, empty
 * buckets left out: `BucketWindow`'s ring, stored sparse (a free key's full minute is 2 numbers).
 *
 * KEYS[1]: the subject's key.
 * ARGV: now in epoch ms ('' for the Redis server's TIME), per-minute quota, per-day quota,
 *       ban threshold, ban seconds, state TTL in ms (0: no TTL, for consumers).
 * Reply (integers): {outcome (0 admitted, 1 rate_limited, 2 key_banned), now, until,
 *       minute count, minute oldest-leaves-at, minute admit-at, day count, day oldest-leaves-at,
 *       day admit-at, events (1: a ban ended, 2: a ban started), banned until}. A time that does
 *       not apply (an empty window's oldest, the admit-at of a window with room) is 0.
 */
import { createHash } from 'node:crypto';
import { DAY, MINUTE } from './buckets.ts';

/** Bumped when the state layout changes: a key of another layout is read as empty. */
const STATE_VERSION = 1;

export const DECIDE_SCRIPT = `
local MINUTE_W, MINUTE_B = ${MINUTE.windowMs}, ${MINUTE.bucketMs}
local DAY_W, DAY_B = ${DAY.windowMs}, ${DAY.bucketMs}
local VERSION = ${STATE_VERSION}

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local per_minute, per_day = tonumber(ARGV[2]), tonumber(ARGV[3])
local threshold, ban_seconds = tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])

local raw = redis.call('GET', KEYS[1])
local s = raw and cmsgpack.unpack(raw)
if type(s) ~= 'table' or s[1] ~= VERSION then s = {VERSION, now, 0, 0, {}, 0, {}, 0, {}} end
-- The clock may step back (or another instance's may lag): the windows must not.
if s[2] > now then now = s[2] end
s[2] = now

-- A window is its offset at s[w] and its (bucket, count) pairs at s[w + 1].
local function count(w)
  local pairs_, n = s[w + 1], 0
  for j = 2, #pairs_, 2 do n = n + pairs_[j] end
  return n
end

local function leaves_at(w, win, b, bucket)
  return s[w] + bucket * b + win
end

-- Drops the buckets that have left the window by now.
local function advance(w, win, b)
  local pairs_ = s[w + 1]
  local dropped = math.floor((now - s[w]) / b) - win / b
  local first = 1
  while pairs_[first] and pairs_[first] <= dropped do first = first + 2 end
  if first > 1 then
    local kept = {}
    for j = first, #pairs_ do kept[#kept + 1] = pairs_[j] end
    s[w + 1] = kept
  end
end

-- Counts one request at now; an empty window first ends a bucket at the next whole second.
local function add(w, b)
  local pairs_ = s[w + 1]
  local n = #pairs_
  if n == 0 then s[w] = (math.ceil(now / 1000) * 1000) % b end
  local bucket = math.ceil((now - s[w]) / b)
  if n > 0 and pairs_[n - 1] == bucket then
    pairs_[n] = pairs_[n] + 1
  else
    pairs_[n + 1] = bucket
    pairs_[n + 2] = 1
  end
end

-- Epoch ms from which a request would be admitted under quota; 0 when it would be now.
local function admit_at(w, win, b, quota)
  local pairs_ = s[w + 1]
  local left = count(w)
  if left < quota then return 0 end
  for j = 1, #pairs_, 2 do
    left = left - pairs_[j + 1]
    if left < quota or left <= 0 then return leaves_at(w, win, b, pairs_[j]) end
  end
  return 0
end

local function oldest_leaves_at(w, win, b)
  local first = s[w + 1][1]
  if first == nil then return 0 end
  return leaves_at(w, win, b, first)
end

advance(4, MINUTE_W, MINUTE_B)
advance(6, DAY_W, DAY_B)
local outcome, until_ms, events = 0, now, 0
if s[3] ~= 0 then
  if now < s[3] then
    outcome, until_ms = 2, s[3]
  else
    s[3] = 0
    events = 1
  end
end
if outcome == 0 then
  if count(4) < per_minute and count(6) < per_day then
    add(4, MINUTE_B)
    add(6, DAY_B)
  else
    outcome = 1
    if threshold >= 1 and ban_seconds > 0 then
      advance(8, MINUTE_W, MINUTE_B)
      add(8, MINUTE_B)
      if count(8) >= threshold then
        s[8], s[9] = 0, {}
        -- Ending on a whole second keeps now + Retry-After equal to the end for the whole ban;
        -- counted from the start of this second, the first Retry-After is ban_seconds, never + 1.
        s[3] = math.floor(now / 1000) * 1000 + ban_seconds * 1000
        outcome, until_ms = 2, s[3]
        events = events + 2
      end
    end
    if outcome == 1 then
      until_ms = math.max(admit_at(4, MINUTE_W, MINUTE_B, per_minute), admit_at(6, DAY_W, DAY_B, per_day))
    end
  end
end

-- Kept as long as anything it counts, and the ban, can matter: Redis memory stays bounded. A TTL
-- of 0 (a consumer's state: few, known) keeps it without one, so maxmemory-policy volatile-lru
-- under a flood of addresses evicts addresses' states, never a key's.
if ttl > 0 then
  local px = ttl
  if s[3] > now then px = px + (s[3] - now) end
  redis.call('SET', KEYS[1], cmsgpack.pack(s), 'PX', px)
else
  redis.call('SET', KEYS[1], cmsgpack.pack(s))
end

return {
  outcome, now, until_ms,
  count(4), oldest_leaves_at(4, MINUTE_W, MINUTE_B), admit_at(4, MINUTE_W, MINUTE_B, per_minute),
  count(6), oldest_leaves_at(6, DAY_W, DAY_B), admit_at(6, DAY_W, DAY_B, per_day),
  events, s[3],
}
`;

/** What EVALSHA names the script by. */
export const DECIDE_SHA1 = createHash('sha1').update(DECIDE_SCRIPT).digest('hex');
