// The Redis limiter's decision as one Lua script, which Redis runs atomically. It does for one
// subject what `SlidingWindowLimiter.decide` does, with the same windows, buckets, refusal counting
// and ban (see `in-process.ts`'s file header), so both give the same Decision for the same requests
// at the same times (`redis.test.ts` replays one sequence into both).
//
// State: one string per subject, a MessagePack array with a TTL:
//   {version, latest time seen, banned until (epoch ms, 0: not banned),
//    minute offset, minute buckets, day offset, day buckets, refusal offset, refusal buckets,
//    month number (year * 12 + month - 1, UTC), units spent in that month, notices sent,
//    notices to give once more}
// The month's two fields are added only once a subject has a monthly quota or thresholds, so a
// state written without them reads the same. Notices sent is a map from "t:day:80" or "x:month"
// (a threshold, a window's first refusal) to the period it was last reported in, present only for
// a subject with thresholds. Updating it in the same atomic run that counts is what makes each
// notice happen once across all instances. Notices to give once more are a flat list of
// (notice's four numbers, from, until): each notice is repeated on the first run between
// `RECORD_AGAIN_AFTER_MS` and `RECORD_AGAIN_WITHIN_MS` after it, while its day or month lasts
// (`notices.ts`), so one whose instance died before recording it is recorded by whichever
// instance runs next for the subject.
// Each window's buckets are a flat list of (bucket number, count) pairs, oldest first, without
// empty buckets: `BucketWindow`'s ring, stored sparse.
//
// KEYS[1]: the subject's key; KEYS[2], for a lease holder: the hash of the instances holding
//       unused units of the subject (instance id -> epoch ms its term ends); KEYS[3]: the hash of
//       each holder's last run that counted units (instance id -> 'run id:booked at:day
//       offset:units'), which a hand-back names.
// ARGV: now in epoch ms ('' for the Redis server's TIME), per-minute quota, per-day quota,
//       ban threshold, ban seconds, state TTL in ms (0: no TTL, for consumers), per-month quota
//       (0: none), cost (units the request spends in every window; 0 reads without spending),
//       thresholds (percent, comma separated, ascending; '' for none); then for a lease holder
//       (`leases.ts`): its instance id, the units it wants (more than the cost asks for a grant),
//       its hand-backs ('run id:units', comma separated, '*' for all the units that run counted:
//       its reply was lost; or ''), and this run's id.
// Reply (integers): {outcome (0 admitted, 1 rate_limited, 2 key_banned), now, until, minute count,
//       minute oldest-leaves-at, minute admit-at, day count, day oldest-leaves-at, day admit-at,
//       events (1: a ban ended, 2: a ban started), banned until, month count, month start, month
//       end (epoch ms; 0 without a monthly quota), notices (a flat list of (kind 1 threshold or 2
//       exhausted, window 1 day or 2 month, threshold or 0, period), or (3 ban started, 0, 0, ban
//       end); this run's first, then those given once more)}. A time that does not apply (an empty
//       window's oldest, the admit-at of a window with room) is 0. Admit-at is for one more unit
//       (the reset); `until` is for the whole cost. Then: units spent (the cost, or a grant's
//       size), the epoch ms they were booked at (a grant's: the last millisecond of its term), the
//       day offset, other holders with a live term, units handed back.
//       A hand-back applies only to the holder's recorded run of the same id, and takes the record
//       away: sent again (its reply lost too), it changes nothing.
//       A refusal while other holders have a live term, or an ended one whose units are not yet
//       handed back (for `HAND_BACK_WITHIN_MS` after its end), is a false refusal: `until` is the
//       end of their terms (at least 1 ms on), and it counts toward no ban and no exhausted notice.
import { createHash } from 'node:crypto';
import { DAY, MINUTE } from './buckets.ts';
import { RECORD_AGAIN_AFTER_MS, RECORD_AGAIN_WITHIN_MS } from './notices.ts';

/**
 * A holder hands back an ended term's unused units within this time (`leases.ts` sweeps twice in
 * it). Until then the units still count as the fleet's; after it the holder is presumed dead and
 * its units stay counted.
 */
export const HAND_BACK_WITHIN_MS = 1_000;

/**
 * How long a holder's record of its last counting run is kept: a run whose reply was lost (Redis
 * slow or gone) can be handed back whole when Redis answers again, as long as its units are still
 * in the day window.
 */
export const RUN_RECORD_MS = DAY.windowMs;
/**
 * Once a subject's hash has more records than this, those older than `RUN_RECORD_MS` (dead
 * holders') are removed.
 */
const RUN_RECORDS_KEPT = 32;

/** Increase when the state layout changes; a key with another version is read as empty. */
const STATE_VERSION = 1;

export const DECIDE_SCRIPT = `
local MINUTE_W, MINUTE_B = ${MINUTE.windowMs}, ${MINUTE.bucketMs}
local DAY_W, DAY_B = ${DAY.windowMs}, ${DAY.bucketMs}
local VERSION = ${STATE_VERSION}
local AGAIN_AFTER, AGAIN_WITHIN = ${RECORD_AGAIN_AFTER_MS}, ${RECORD_AGAIN_WITHIN_MS}
local HAND_BACK_WITHIN = ${HAND_BACK_WITHIN_MS}
local RECORD_MS, RECORDS_KEPT = ${RUN_RECORD_MS}, ${RUN_RECORDS_KEPT}
-- Where each field of the state is (its layout: this file's opening comment). A window is its
-- offset at AT_<window> and its (bucket, count) pairs at AT_<window> + 1.
local AT_VERSION, AT_SEEN, AT_BANNED_UNTIL = 1, 2, 3
local AT_MINUTE, AT_DAY, AT_REFUSALS = 4, 6, 8
local AT_MONTH, AT_MONTH_SPENT, AT_NOTICED, AT_AGAIN = 10, 11, 12, 13

local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local per_minute, per_day = tonumber(ARGV[2]), tonumber(ARGV[3])
local threshold, ban_seconds = tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])
local per_month, cost = tonumber(ARGV[7]), tonumber(ARGV[8])
local thresholds = {}
for t in string.gmatch(ARGV[9] or '', '%d+') do thresholds[#thresholds + 1] = tonumber(t) end
-- Leases (leases.ts): the holder ('' for a plain decision), the units it wants, what it hands
-- back (run id:units, '*' for all that run counted), and this run's id.
local holder = ARGV[10] or ''
local leasing = holder ~= ''
local wanted = tonumber(ARGV[11]) or 0
local backs = ARGV[12] or ''
local run_id = ARGV[13] or ''

local raw = redis.call('GET', KEYS[1])
local s = raw and cmsgpack.unpack(raw)
if type(s) ~= 'table' or s[AT_VERSION] ~= VERSION then s = {VERSION, now, 0, 0, {}, 0, {}, 0, {}} end
if #thresholds > 0 then
  -- No holes before the notices' map: a Lua array with holes does not pack as an array.
  s[AT_MONTH], s[AT_MONTH_SPENT] = s[AT_MONTH] or 0, s[AT_MONTH_SPENT] or 0
  if type(s[AT_NOTICED]) ~= 'table' then s[AT_NOTICED] = {} end
  if type(s[AT_AGAIN]) ~= 'table' then s[AT_AGAIN] = {} end
end
-- The clock may step back (or another instance's may lag): the windows must not.
if s[AT_SEEN] > now then now = s[AT_SEEN] end
s[AT_SEEN] = now
-- Units are counted as of this time: now, or for a grant the last moment of its term.
local booked = now

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

-- Counts units at now; an empty window first ends a bucket at the next whole second.
local function add(w, b, units)
  local pairs_ = s[w + 1]
  local n = #pairs_
  if n == 0 then s[w] = (math.ceil(booked / 1000) * 1000) % b end
  local bucket = math.ceil((booked - s[w]) / b)
  if n > 0 and pairs_[n - 1] == bucket then
    pairs_[n] = pairs_[n] + units
  else
    pairs_[n + 1] = bucket
    pairs_[n + 2] = units
  end
end

-- Days since the epoch of a proleptic Gregorian date (H. Hinnant's days_from_civil): Redis's Lua
-- has no date library, and the month must turn at 00:00 UTC on the 1st, as in month.ts.
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- The month number (year * 12 + month - 1) of an epoch ms (civil_from_days).
local function month_number(ms)
  local z = math.floor(ms / 86400000) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y * 12 + m - 1
end

local function month_start(number)
  return days_from_civil(math.floor(number / 12), number % 12 + 1, 1) * 86400000
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

advance(AT_MINUTE, MINUTE_W, MINUTE_B)
advance(AT_DAY, DAY_W, DAY_B)
local month_from, month_to = 0, 0
if per_month > 0 then
  local number = month_number(now)
  if s[AT_MONTH] ~= number then s[AT_MONTH], s[AT_MONTH_SPENT] = number, 0 end
  month_from, month_to = month_start(number), month_start(number + 1)
end

-- A hand-back takes unused units out of the buckets they were booked in (gone ones are gone).
local function give_back(w, b, at, units)
  local pairs_ = s[w + 1]
  local bucket = math.ceil((at - s[w]) / b)
  for j = 1, #pairs_, 2 do
    if pairs_[j] == bucket then
      if pairs_[j + 1] > units then
        pairs_[j + 1] = pairs_[j + 1] - units
      else
        table.remove(pairs_, j + 1)
        table.remove(pairs_, j)
      end
      return
    end
  end
end
-- Each hand-back names a run of this holder: applied only while that run is the one recorded,
-- and the record goes with it, so a hand-back sent again changes nothing.
local handed_back = 0
if leasing and backs ~= '' then
  local record = redis.call('HGET', KEYS[3], holder)
  for id, units in string.gmatch(backs, '(%d+):([%d*]+)') do
    local r_id, r_at, r_offset, r_units
    if record then r_id, r_at, r_offset, r_units = string.match(record, '^(%d+):(%d+):(%d+):(%d+)$') end
    if r_id == id then
      local at, n = tonumber(r_at), tonumber(r_units)
      if units ~= '*' then n = math.min(n, tonumber(units)) end
      give_back(AT_MINUTE, MINUTE_B, at, n)
      if s[AT_DAY] == tonumber(r_offset) then give_back(AT_DAY, DAY_B, at, n) end
      if per_month > 0 and s[AT_MONTH] == month_number(at) then
        s[AT_MONTH_SPENT] = math.max(0, s[AT_MONTH_SPENT] - n)
      end
      handed_back = handed_back + n
      record = nil
      redis.call('HDEL', KEYS[3], holder)
      -- The holder's last counted run is handed back: it holds nothing of this subject now.
      redis.call('HDEL', KEYS[2], holder)
    end
  end
end

-- Other instances holding unused units now (a live term, or an ended one not yet handed back),
-- and when the last of their terms ends: read only by a grant and a refusal, so an admitted
-- decision per request costs what it did without leases.
local others, others_until, others_read = 0, 0, false
local function read_others()
  if others_read or not leasing then return end
  others_read = true
  local held = redis.call('HGETALL', KEYS[2])
  for j = 1, #held, 2 do
    local term_end = tonumber(held[j + 1])
    if term_end + HAND_BACK_WITHIN <= now then
      redis.call('HDEL', KEYS[2], held[j])
    elseif held[j] ~= holder then
      others, others_until = others + 1, math.max(others_until, term_end, now + 1)
    end
  end
end
local outcome, until_ms, events = 0, now, 0
if s[AT_BANNED_UNTIL] ~= 0 then
  if now < s[AT_BANNED_UNTIL] then
    outcome, until_ms = 2, s[AT_BANNED_UNTIL]
  else
    s[AT_BANNED_UNTIL] = 0
    events = 1
  end
end
local month_fits = per_month == 0 or s[AT_MONTH_SPENT] + cost <= per_month
local notices = {}
-- Noticed once per period: false when this (key, period) was noticed already.
local function first(key, period)
  if s[AT_NOTICED][key] == period then return false end
  s[AT_NOTICED][key] = period
  return true
end
local function crossed(window, code, quota, before, after, period)
  for _, t in ipairs(thresholds) do
    local units = math.max(1, math.ceil(t * quota / 100))
    if before < units and units <= after and first('t:' .. window .. ':' .. t, period) then
      for _, n in ipairs({1, code, t, period}) do notices[#notices + 1] = n end
    end
  end
end
local day_period = math.floor(now / 86400000)
local granted, asked = 0, cost
if outcome == 0 and cost > 0 and leasing and wanted > cost then
  -- A grant: a fair share of the room left, shrinking to the request's cost as the room runs
  -- low, and never past a notice threshold (a crossing is noticed when its units are used).
  read_others()
  local day_before = count(AT_DAY)
  local room = math.min(per_minute - count(AT_MINUTE), per_day - day_before)
  if per_month > 0 then room = math.min(room, per_month - s[AT_MONTH_SPENT]) end
  local n = math.min(wanted, math.floor(room / (2 * (others + 1))))
  local function below(quota, before)
    for _, t in ipairs(thresholds) do
      local gap = math.max(1, math.ceil(t * quota / 100)) - 1 - before
      if gap >= 0 and gap < n then n = gap end
    end
  end
  below(per_day, day_before)
  if per_month > 0 then below(per_month, s[AT_MONTH_SPENT]) end
  -- A term ends on the next whole second: the end of the minute's bucket, which no day or month
  -- boundary splits. A request on a whole second has a term of an instant: its cost alone.
  if n > cost and now % 1000 ~= 0 then
    cost = n
    booked = math.ceil(now / 1000) * 1000 - 1
  end
end
-- A cost of 0 reads the state: nothing spent, no refusal counted.
if outcome == 0 and cost > 0 then
  local day_before = count(AT_DAY)
  if count(AT_MINUTE) + cost <= per_minute and day_before + cost <= per_day and month_fits then
    add(AT_MINUTE, MINUTE_B, cost)
    add(AT_DAY, DAY_B, cost)
    if per_month > 0 then s[AT_MONTH_SPENT] = s[AT_MONTH_SPENT] + cost end
    granted = cost
    if granted > asked then
      redis.call('HSET', KEYS[2], holder, booked + 1)
      redis.call('PEXPIRE', KEYS[2], booked + 1 - now + HAND_BACK_WITHIN)
    end
    if leasing and run_id ~= '' then
      -- What a hand-back of this run takes back, all of it when its reply is lost.
      redis.call('HSET', KEYS[3], holder, run_id .. ':' .. booked .. ':' .. s[AT_DAY] .. ':' .. granted)
      redis.call('PEXPIRE', KEYS[3], RECORD_MS)
      if redis.call('HLEN', KEYS[3]) > RECORDS_KEPT then
        local records = redis.call('HGETALL', KEYS[3])
        for j = 1, #records, 2 do
          local at = tonumber(string.match(records[j + 1], '^%d+:(%d+):'))
          if not at or at + RECORD_MS <= now then redis.call('HDEL', KEYS[3], records[j]) end
        end
      end
    end
    if #thresholds > 0 then
      crossed('day', 1, per_day, day_before, day_before + cost, day_period)
      if per_month > 0 then crossed('month', 2, per_month, s[AT_MONTH_SPENT] - cost, s[AT_MONTH_SPENT], s[AT_MONTH]) end
    end
  elseif leasing and (read_others() or others > 0) then
    -- Refused while other instances hold units of the budget: neither counted toward a ban nor
    -- noticed as exhausted, and retried when their terms end.
    outcome, until_ms = 1, others_until
  else
    if #thresholds > 0 then
      if day_before + cost > per_day and first('x:day', day_period) then
        for _, n in ipairs({2, 1, 0, day_period}) do notices[#notices + 1] = n end
      end
      if not month_fits and first('x:month', s[AT_MONTH]) then
        for _, n in ipairs({2, 2, 0, s[AT_MONTH]}) do notices[#notices + 1] = n end
      end
    end
    outcome = 1
    if threshold >= 1 and ban_seconds > 0 then
      advance(AT_REFUSALS, MINUTE_W, MINUTE_B)
      add(AT_REFUSALS, MINUTE_B, 1)
      if count(AT_REFUSALS) >= threshold then
        s[AT_REFUSALS], s[AT_REFUSALS + 1] = 0, {}
        -- Ending on a whole second keeps now + Retry-After equal to the end for the whole ban;
        -- counted from the start of this second, the first Retry-After is ban_seconds, never + 1.
        s[AT_BANNED_UNTIL] = math.floor(now / 1000) * 1000 + ban_seconds * 1000
        outcome, until_ms = 2, s[AT_BANNED_UNTIL]
        events = events + 2
        if #thresholds > 0 then
          for _, n in ipairs({3, 0, 0, s[AT_BANNED_UNTIL]}) do notices[#notices + 1] = n end
        end
      end
    end
    if outcome == 1 then
      until_ms = math.max(
        admit_at(AT_MINUTE, MINUTE_W, MINUTE_B, per_minute - cost + 1),
        admit_at(AT_DAY, DAY_W, DAY_B, per_day - cost + 1))
      if not month_fits then until_ms = math.max(until_ms, month_to) end
    end
  end
end

-- This run's notices wait to be given once more; those due now are given after them.
if #thresholds > 0 then
  local waiting, fresh = {}, #notices
  local again = s[AT_AGAIN]
  -- A ban is always current; a day's or a month's notice only in its own period.
  local periods = #again > 0 and {day_period, month_number(now)} or {}
  for j = 1, #again, 6 do
    local window = again[j + 1]
    if now < again[j + 4] then
      for k = 0, 5 do waiting[#waiting + 1] = again[j + k] end
    elseif now < again[j + 5] and (window == 0 or again[j + 3] == periods[window]) then
      for k = 0, 3 do notices[#notices + 1] = again[j + k] end
    end
  end
  for j = 1, fresh, 4 do
    for k = 0, 3 do waiting[#waiting + 1] = notices[j + k] end
    waiting[#waiting + 1] = now + AGAIN_AFTER
    waiting[#waiting + 1] = now + AGAIN_WITHIN
  end
  s[AT_AGAIN] = waiting
end

-- Kept as long as anything it counts, and the ban, can matter: Redis memory stays bounded. A TTL
-- of 0 (a consumer's state: few, known) keeps it without one, so maxmemory-policy volatile-lru
-- under a flood of addresses evicts addresses' states, never a key's.
if ttl > 0 then
  local px = ttl
  if s[AT_BANNED_UNTIL] > now then px = px + (s[AT_BANNED_UNTIL] - now) end
  redis.call('SET', KEYS[1], cmsgpack.pack(s), 'PX', px)
else
  redis.call('SET', KEYS[1], cmsgpack.pack(s))
end

return {
  outcome, now, until_ms,
  count(AT_MINUTE), oldest_leaves_at(AT_MINUTE, MINUTE_W, MINUTE_B), admit_at(AT_MINUTE, MINUTE_W, MINUTE_B, per_minute),
  count(AT_DAY), oldest_leaves_at(AT_DAY, DAY_W, DAY_B), admit_at(AT_DAY, DAY_W, DAY_B, per_day),
  events, s[AT_BANNED_UNTIL],
  per_month > 0 and s[AT_MONTH_SPENT] or 0, month_from, month_to, notices,
  granted, booked, s[AT_DAY], others, handed_back,
}
`;

/** The script's SHA-1, for EVALSHA. */
export const DECIDE_SHA1 = createHash('sha1').update(DECIDE_SCRIPT).digest('hex');
