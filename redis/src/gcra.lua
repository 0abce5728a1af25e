-- resilix-redis: one GCRA decision, atomic in Redis, on Redis's own clock.
--
-- The state is the bucket's theoretical arrival time (TAT): the instant at which the bucket
-- would be full again, kept as whole seconds `s` and nanoseconds `n` in a hash. Debt is
-- TAT - now; a cell costs one emission interval T of debt, and a call of `cells` is admitted
-- when the debt after it is at most the span, burst * T. The same decision as
-- resilix::rate_limit documents it, in wide time:
--   ahead <= 0                  a bucket that has refilled: no debt
--   0 < ahead <= span + early   debt (beyond the span: a caller behind the latest admission)
--   ahead > span + early        a bucket left idle under a clock that stepped back: no debt
--
-- KEYS[1]  the bucket
-- ARGV[1]  T, the emission interval, in whole nanoseconds (>= 1)
-- ARGV[2]  burst (>= 1)
-- ARGV[3]  cells asked for (1 <= cells <= burst)
-- ARGV[4]  early, nanoseconds
-- ARGV[5], ARGV[6]  optional: `now` as seconds and nanoseconds, for tests and replays. Absent
--          (or empty strings), the script reads Redis's `TIME`, the one clock every client
--          shares. With an explicit `now` the key gets no TTL: Redis expires keys on its own
--          clock, which the explicit timeline does not follow.
-- ARGV[7], ARGV[8]  optional (or empty strings): the caller's deadline on the same clock,
--          seconds and nanoseconds. Past it the caller has given up: the script decides
--          nothing, spends nothing and answers -1 (stale work costs a clock read, not the
--          bucket).
-- ARGV[9]  optional: '1' admits as many of `cells` as fit (at least one) instead of all or
--          none: the calls of a batch, decided in one script call.
--
-- Returns {admitted (1|0; with ARGV[9], the number of cells admitted; -1: past the deadline,
--          nothing decided), wait ns (0 if admitted), remaining cells, ns until full,
--          now seconds, now nanoseconds}.
--
-- Arithmetic: Lua 5.1 numbers are doubles, exact for integers below 2^53. The caller keeps
-- span + early <= 2^52 ns, so every debt, sum and product below is an integer under 2^53;
-- seconds are compared before they are multiplied, so a TAT years away (a far step of the
-- clock) is classified without forming an inexact product.

local key = KEYS[1]
local T = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cells = tonumber(ARGV[3])
local early = tonumber(ARGV[4])
local GIGA = 1000000000
local span = T * burst
if not (T and burst and cells and early) or T < 1 or burst < 1 or cells < 1 or cells > burst
    or early < 0 or span + early > 4503599627370496 then
  return redis.error_reply('resilix gcra: bad arguments')
end

local now_s, now_n, explicit
if ARGV[5] and ARGV[5] ~= '' then
  now_s = tonumber(ARGV[5])
  now_n = tonumber(ARGV[6])
  explicit = true
else
  local t = redis.call('TIME')
  now_s = tonumber(t[1])
  now_n = tonumber(t[2]) * 1000
  explicit = false
end

if ARGV[7] and ARGV[7] ~= '' then
  local d_s = tonumber(ARGV[7])
  local d_n = tonumber(ARGV[8])
  if now_s > d_s or (now_s == d_s and now_n > d_n) then
    return {-1, 0, 0, 0, now_s, now_n}
  end
end
local partial = ARGV[9] == '1'

-- Seconds and nanoseconds of a non-negative integer count of nanoseconds (< 2^53). The
-- quotient of two doubles can round up across an integer near 2^53, so the remainder is
-- corrected into [0, 1e9) with exact integer steps.
local function split(total)
  local s = math.floor(total / GIGA)
  local r = total - s * GIGA
  if r < 0 then
    s = s - 1
    r = r + GIGA
  elseif r >= GIGA then
    s = s + 1
    r = r - GIGA
  end
  return s, r
end

-- floor(a / b) for integers 0 <= a < 2^53, b >= 1, corrected the same way.
local function quotient(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

local debt = 0
local stored = redis.call('HMGET', key, 's', 'n')
if stored[1] and stored[2] then
  local ds = tonumber(stored[1]) - now_s
  -- Beyond this many seconds ahead the TAT is past span + early whatever the nanoseconds.
  local limit_s = math.floor((span + early) / GIGA) + 1
  if ds >= -1 and ds <= limit_s then
    local ahead = ds * GIGA + (tonumber(stored[2]) - now_n)
    if ahead > 0 and ahead <= span + early then
      debt = ahead
    end
  end
end

local after = debt + cells * T
if after > span and partial and debt < span then
  local fit = quotient(span - debt, T)
  if fit >= 1 then
    cells = fit
    after = debt + cells * T
  end
end
if after <= span then
  local ds, tat_n = split(now_n + after)
  redis.call('HSET', key, 's', now_s + ds, 'n', tat_n)
  if explicit then
    redis.call('PERSIST', key)
  else
    -- Expiry runs on this same clock, in milliseconds: rounded up, plus one for the
    -- millisecond boundary, so the key outlives its TAT and never resets early.
    redis.call('PEXPIRE', key, quotient(after + 999999, 1000000) + 1)
  end
  local admitted = 1
  if partial then
    admitted = cells
  end
  return {admitted, 0, quotient(span - after, T), after, now_s, now_n}
end
local left = 0
if debt < span then
  left = quotient(span - debt, T)
end
return {0, after - span, left, debt, now_s, now_n}
