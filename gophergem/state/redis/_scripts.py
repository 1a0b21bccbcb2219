# -*- test-case-name: tests.test_state_redis -*-
"""
The Lua scripts of L{gophergem.state.redis}: each reads the time from Redis
(C{TIME}) and changes one key atomically, so that every replica sees one
order of events whatever its own clock says.
"""

__all__ = ["ACQUIRE", "BOOK", "LEFT", "NOTE", "RENEW", "UNBOOK"]

# Time in Redis: microseconds for the pacer (an interval of 0.1 s must not
# round), milliseconds elsewhere.  Lua numbers are doubles: exact to 2**53,
# far beyond either.  Numbers go back as strings, which Lua would otherwise
# truncate to integers.
_NOW_US = "local t = redis.call('TIME')\nlocal now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
_NOW_MS = (
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
)

# KEYS[1] a host's lane; ARGV[1] this booking's interval (us).  Book the
# first slot at or after the lane's next free one; return {delay until it,
# the slot's end} (us).  The lane holds only the end of its last slot, so the
# pacers of every scheme may book one lane with intervals of their own: each
# slot is as long as its own booking asked, and the next starts at its end.
BOOK = (
    _NOW_US
    + """
local interval = tonumber(ARGV[1])
local start = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if start < now then start = now end
local finish = start + interval
redis.call('SET', KEYS[1], string.format('%.0f', finish),
           'PX', math.floor((finish - now) / 1000) + 1000)
return {string.format('%.0f', start - now), string.format('%.0f', finish)}
"""
)

# KEYS[1] a host's lane; ARGV[1] a booked slot's end, ARGV[2] the interval
# it was booked with (us).  Give the slot back when nobody booked after it:
# the lane's next free time becomes that slot's start again (with mixed
# intervals too, since each booking gives back its own length).
UNBOOK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], string.format('%.0f', tonumber(ARGV[1]) - tonumber(ARGV[2])),
             'KEEPTTL')
  return 1
end
return 0
"""

# KEYS[1] leases; ARGV[1] limit, ARGV[2] lease (ms), ARGV[3] holder.
ACQUIRE = (
    _NOW_MS
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[2]))
  return 1
end
return 0
"""
)

# KEYS[1] leases; ARGV[1] lease (ms), ARGV[2] holder.  Extend a lease still held.
RENEW = (
    _NOW_MS
    + """
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[2])
  redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[1]))
  return 1
end
return 0
"""
)

# KEYS[1] a host's 44 record; ARGV: the wait META asked for (ms, or -1 for
# free text), the shortest and longest waits and the forgetting time (ms).
NOTE = (
    _NOW_MS
    + """
local asked = tonumber(ARGV[1])
local shortest, longest, forget = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local saved = redis.call('HMGET', KEYS[1], 'until', 'streak')
local last = tonumber(saved[1])
local streak = 1
if last and now - last < forget then
  streak = (tonumber(saved[2]) or 0) + 1
else
  last = nil
end
local wait = asked
if wait < 0 then
  local doubling = streak - 1
  if doubling > 32 then doubling = 32 end
  wait = shortest * 2 ^ doubling
  if wait > longest then wait = longest end
end
local finish = now + wait
if last and last > finish then finish = last end
redis.call('HSET', KEYS[1], 'until', string.format('%.0f', finish), 'streak', streak)
redis.call('PEXPIRE', KEYS[1], math.floor(finish - now + forget))
return string.format('%.0f', finish - now)
"""
)

# KEYS[1] a host's 44 record: the milliseconds left, or -1.
LEFT = (
    _NOW_MS
    + """
local last = tonumber(redis.call('HGET', KEYS[1], 'until'))
if not last or last <= now then return -1 end
return string.format('%.0f', last - now)
"""
)
