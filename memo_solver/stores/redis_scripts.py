"""The Lua scripts of the shared store, and the openings every script here and in
:mod:`memo_solver.jobs.queue` starts with.

A script is how Redis does several things to one group's keys atomically with a decision
between them (a claim checked and taken, blocks written with their claims dropped and their
keys published), so each claim, renewal, release, commit and delete of
:class:`memo_solver.stores.redis.RedisStore` is one script per group touched, as are the
registrations' steps. Each says above it what its ``KEYS`` and ``ARGV`` are, the contract
:mod:`memo_solver.stores.redis` builds its calls to; every script's keys are in one slot (one
group's, or the registrations': :mod:`memo_solver.stores.redis_keys`). They live apart from
the Python that runs them, being another language with another reader: one following the
store's Python reads a script's name and its contract, one checking what is atomic reads
the scripts, together.
"""

from __future__ import annotations

from typing import Final

# Claims live twice: a key per block with the lease as its TTL (what a waiter checks) and a
# member of the group's claims set scored by the same expiry in Redis's own clock (what
# coverage counts, with no SCAN). Every script keeps the two in step and prunes the set of
# lapsed members as it goes, so the set holds about the live claims and never grows.
# Every script opens with a shebang (Redis 7) that says what it does to memory, so that a
# Redis at maxmemory refuses a script that would grow it before it starts, never halfway
# (without one, Redis refuses only the first write, and not at all after a DEL).
LUA_WRITES: Final = "#!lua\n"
"""A script that may grow what Redis holds: refused at once by a Redis at maxmemory."""
LUA_FREES: Final = "#!lua flags=allow-oom\n"
"""A script that only deletes, expires or overwrites a small fixed record: it runs even at
maxmemory, so claims are let go and workers stay visible while Redis refuses new blocks."""
LUA_READS: Final = "#!lua flags=no-writes\n"
"""A script that only reads: it runs at maxmemory, so status and health still answer."""

LUA_NOW_MS: Final = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
"""
"""Sets ``now``, Redis's own clock in ms, for a script: expiry scores then agree with the
TTLs Redis keeps, whichever host's script wrote them."""

# KEYS: the group's blocks hash, claims set, copy of the layout record, then one claim key
# per block. ARGV: token, lease ms, '' (so that ARGV[i] is KEYS[i]'s block), then block keys.
# 'gone', claiming nothing, when the copy is (see COMMIT).
CLAIM: Final = (
    LUA_WRITES
    + LUA_NOW_MS
    + """
if redis.call('EXISTS', KEYS[3]) == 0 then
  return 'gone'
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local expiry = now + tonumber(ARGV[2])
local out = {}
for i = 4, #KEYS do
  local field = ARGV[i]
  if redis.call('HEXISTS', KEYS[1], field) == 1 then
    out[#out + 1] = 'done'
  elseif redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', ARGV[2]) then
    redis.call('ZADD', KEYS[2], expiry, field)
    out[#out + 1] = 'claimed'
  elseif redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    redis.call('ZADD', KEYS[2], expiry, field)
    out[#out + 1] = 'claimed'
  else
    out[#out + 1] = 'busy'
  end
end
return out
"""
)

# KEYS: the group's claims set, then claim keys. ARGV: token, lease ms, then block keys.
RENEW: Final = (
    LUA_FREES
    + LUA_NOW_MS
    + """
for i = 2, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[i + 1])
  end
end
return 0
"""
)

# KEYS: the group's claims set, its channel, then claim keys. ARGV: token, the key
# separator, then block keys. Publishes the released keys in one message.
RELEASE: Final = (
    LUA_FREES
    + """
local released = {}
for i = 3, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[1], ARGV[i])
    released[#released + 1] = ARGV[i]
  end
end
if #released > 0 then
  redis.call('SPUBLISH', KEYS[2], table.concat(released, ARGV[2]))
end
return 0
"""
)

# KEYS: the group's blocks hash, claims set, channel, copy of the layout record, then one
# claim key per block. ARGV: token ('' for none), the key separator, then (block key, data)
# pairs. Publishes every committed key in one message; writes nothing and answers -1 when
# the layout record's copy is gone (the namespace deleted since this process wrote to it).
COMMIT: Final = (
    LUA_WRITES
    + """
if redis.call('EXISTS', KEYS[4]) == 0 then
  return -1
end
local keys = {}
for i = 5, #KEYS do
  local at = 3 + (i - 5) * 2
  redis.call('HSET', KEYS[1], ARGV[at], ARGV[at + 1])
  if ARGV[1] ~= '' and redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[2], ARGV[at])
  end
  keys[#keys + 1] = ARGV[at]
end
redis.call('SPUBLISH', KEYS[3], table.concat(keys, ARGV[2]))
return 0
"""
)

# KEYS: the group's claims set, its blocks hash. ARGV: MEMORY USAGE samples. Blocks stored,
# live claims, and the bytes Redis spends on the hash (sampled): a few O(1) commands.
COVERAGE: Final = (
    LUA_READS
    + LUA_NOW_MS
    + """
local size = redis.call('MEMORY', 'USAGE', KEYS[2], 'SAMPLES', ARGV[1]) or 0
return {redis.call('HLEN', KEYS[2]), redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'), size}
"""
)

# KEYS: the group's blocks hash, claims set, copy of the layout record, then its claim
# keys (or any keys of the group: its strays). Counts the blocks and
# deletes every key at once; UNLINK frees a large hash in the background instead of blocking
# Redis while it does. It only deletes, so it runs at maxmemory: a full Redis is when an
# operator prunes.
DELETE_GROUP: Final = (
    LUA_FREES
    + """
local blocks = redis.call('HLEN', KEYS[1])
for i = 1, #KEYS do
  redis.call('UNLINK', KEYS[i])
end
return blocks
"""
)

# KEYS: the layout record, the blocks hash and claims set of the one-group layout (a
# namespace written before groups existed, which keeps no record until now). ARGV: the
# groups of a new namespace. The namespace's number of groups, fixed by the first writer.
LAYOUT: Final = (
    LUA_WRITES
    + """
local groups = redis.call('GET', KEYS[1])
if groups then
  return tonumber(groups)
end
groups = ARGV[1]
if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then
  groups = '1'
end
redis.call('SET', KEYS[1], groups)
return tonumber(groups)
"""
)

# KEYS: the registrations' (redis_keys.REGISTRATIONS). ARGV: name, fingerprint, document,
# quota. Registers the name if it is free and fewer than quota names are (nil), else answers
# the document that holds it, or 0 when the quota is reached.
REGISTER: Final = (
    LUA_WRITES
    + """
local held = redis.call('HGET', KEYS[2], ARGV[1])
if held then
  return held
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('ZADD', KEYS[1], 0, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[4], ARGV[2], 1)
return false
"""
)

# KEYS: the registered names, their documents. ARGV: the ZRANGEBYLEX lower bound, the limit.
# Names and documents, alternately.
REGISTRATIONS_PAGE: Final = (
    LUA_READS
    + """
local out = {}
for _, name in ipairs(redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], '+', 'LIMIT', 0, ARGV[2])) do
  out[#out + 1] = name
  out[#out + 1] = redis.call('HGET', KEYS[2], name)
end
return out
"""
)

# KEYS: the registered documents, the stamps. ARGV: when, then the names asked about.
MARK_USED: Final = (
    LUA_WRITES
    + """
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[1])
  end
end
return 0
"""
)

# KEYS: the registered names, the stamps. ARGV: now. Names and stamps, alternately; a name
# without one is stamped now, a stamp without a name dropped. It runs at maxmemory (what an
# operator pruning a full Redis needs): it adds at most a stamp per registration, a few bytes
# each, bounded by the registration quota.
LAST_USED: Final = (
    LUA_FREES
    + """
local out = {}
for _, name in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local used = redis.call('HGET', KEYS[2], name)
  if not used then
    used = ARGV[1]
    redis.call('HSET', KEYS[2], name, used)
  end
  out[#out + 1] = name
  out[#out + 1] = used
end
for _, name in ipairs(redis.call('HKEYS', KEYS[2])) do
  if not redis.call('ZSCORE', KEYS[1], name) then
    redis.call('HDEL', KEYS[2], name)
  end
end
return out
"""
)

# KEYS: the registrations'. ARGV: name. Nil when the name is not registered, else how many
# names its fingerprint still has. It only deletes and counts down, so it runs at maxmemory.
UNREGISTER: Final = (
    LUA_FREES
    + """
local fingerprint = redis.call('HGET', KEYS[3], ARGV[1])
if not fingerprint then
  return false
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
local others = redis.call('HINCRBY', KEYS[4], fingerprint, -1)
if others <= 0 then
  redis.call('HDEL', KEYS[4], fingerprint)
end
return others
"""
)
