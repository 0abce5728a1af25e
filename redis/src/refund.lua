-- resilix-redis: give back cells a fleet decision admitted and the caller did not use.
--
-- KEYS[1]  the bucket
-- ARGV[1]  T, the emission interval, in whole nanoseconds (>= 1)
-- ARGV[2]  cells given back (>= 1)
-- ARGV[3], ARGV[4]  the TAT the admission left (its reply's now + reset_after), seconds and
--          nanoseconds, on this server's clock
--
-- Returns the nanoseconds of debt removed (0: nothing given back).
--
-- The rule keeps the bucket no more permissive than if the cells had never been admitted.
-- With X the TAT the admission left and TAT the stored one, the history without those cells
-- has a TAT of at most max(TAT - cells * T, now + (TAT - X)): the admissions after X moved the
-- TAT by TAT - X at most, from no earlier than now. So the stored TAT drops to that, never
-- lower; a bucket that went idle since (TAT < X: the key expired or was reset) is left alone.
-- Used cells in any window therefore stay within burst + W / T, exactly as without refunds.

local key = KEYS[1]
local T = tonumber(ARGV[1])
local cells = tonumber(ARGV[2])
local x_s = tonumber(ARGV[3])
local x_n = tonumber(ARGV[4])
if not (T and cells and x_s and x_n) or T < 1 or cells < 1 then
  return redis.error_reply('resilix refund: bad arguments')
end
local GIGA = 1000000000
local stored = redis.call('HMGET', key, 's', 'n')
if not (stored[1] and stored[2]) then
  return 0
end
local t = redis.call('TIME')
local now_s = tonumber(t[1])
local now_n = tonumber(t[2]) * 1000
local tat_s = tonumber(stored[1])
local tat_n = tonumber(stored[2])
-- Everything relative to now, in nanoseconds; the script's callers keep the span below 2^51,
-- so a TAT worth refunding is within that of now (anything further is left alone).
local ahead_s = tat_s - now_s
if ahead_s < -1 or ahead_s > 2251799 then
  return 0
end
local ahead = ahead_s * GIGA + (tat_n - now_n)
local x_ahead_s = x_s - now_s
if x_ahead_s < -2251800 or x_ahead_s > 2251799 then
  return 0
end
local x_ahead = x_ahead_s * GIGA + (x_n - now_n)
if ahead <= 0 or ahead < x_ahead then
  return 0
end
local floor_ahead = ahead - x_ahead
local target = ahead - cells * T
if target < floor_ahead then
  target = floor_ahead
end
if target < 0 then
  target = 0
end
if target >= ahead then
  return 0
end
local total = now_n + target
local ds = math.floor(total / GIGA)
local r = total - ds * GIGA
if r < 0 then
  ds = ds - 1
  r = r + GIGA
elseif r >= GIGA then
  ds = ds + 1
  r = r - GIGA
end
redis.call('HSET', key, 's', now_s + ds, 'n', r)
return ahead - target
