"""The Lua scripts of the shared Redis store: each step of the lease protocol is one script,
so Redis runs it atomically and no two workers can both take an agent.

Keys (`P` is the store's prefix): `P:agents` (hash: id → snapshot), `P:owners` (hash: id →
the worker holding it), `P:deadlines` (sorted set: id scored by its pause deadline),
`P:next_id` (counter) and `P:worker:NAME` (a key with an expiry: worker NAME is alive while it
exists). An agent is held by a worker when its `owners` field names a worker whose key exists.
"""

# KEYS: agents, owners. ARGV: id, me, worker key prefix, adopt ("1": claim even if not stored).
CLAIM = """
local doc = redis.call('HGET', KEYS[1], ARGV[1])
if not doc and ARGV[4] ~= '1' then return {'missing'} end
local owner = redis.call('HGET', KEYS[2], ARGV[1])
if owner and owner ~= ARGV[2] and redis.call('EXISTS', ARGV[3] .. owner) == 1 then
  return {'busy', doc or '', owner}
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return {'claimed', doc or ''}
"""

# KEYS: agents, owners, deadlines. ARGV: me, then id, snapshot, deadline ("" = none) for each
# agent. Writes the agents this worker holds (snapshot and deadline index) and returns the ids
# of the others, untouched. One HMGET, one HSET and at most one ZREM and one ZADD whatever the
# count (the caller keeps a call under `unpack`'s limit).
SAVE_MANY = """
local ids = {}
for i = 2, #ARGV, 3 do ids[#ids + 1] = ARGV[i] end
local owners = redis.call('HMGET', KEYS[2], unpack(ids))
local refused, docs, gone, due = {}, {}, {}, {}
for n, id in ipairs(ids) do
  local at = 3 * n - 1
  if owners[n] == ARGV[1] then
    docs[#docs + 1] = id
    docs[#docs + 1] = ARGV[at + 1]
    if ARGV[at + 2] == '' then
      gone[#gone + 1] = id
    else
      due[#due + 1] = ARGV[at + 2]
      due[#due + 1] = id
    end
  else
    refused[#refused + 1] = id
  end
end
if #docs > 0 then redis.call('HSET', KEYS[1], unpack(docs)) end
if #gone > 0 then redis.call('ZREM', KEYS[3], unpack(gone)) end
if #due > 0 then redis.call('ZADD', KEYS[3], unpack(due)) end
return refused
"""

# KEYS: agents, owners, deadlines. ARGV: id, me. Refused (0) only if another worker holds it.
DELETE = """
local owner = redis.call('HGET', KEYS[2], ARGV[1])
if owner and owner ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
"""

# KEYS: owners. ARGV: me, ids... Only fields naming this worker are removed.
RELEASE = """
for i = 2, #ARGV do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[1] then redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return 1
"""

# KEYS: owners. ARGV: me, ids... The ids this worker holds.
HELD = """
local mine = {}
for i = 2, #ARGV do
  if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[1] then mine[#mine + 1] = ARGV[i] end
end
return mine
"""

# KEYS: next_id, owners, agents. ARGV: me, durable ("1"). The counter starts past every id
# already stored (a store written before the counter existed), and skips any id stored since.
ALLOCATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  local top = 0
  for _, field in ipairs(redis.call('HKEYS', KEYS[3])) do
    local n = tonumber(field)
    if n and n > top then top = n end
  end
  redis.call('SET', KEYS[1], top)
end
local id = redis.call('INCR', KEYS[1])
while redis.call('HEXISTS', KEYS[3], id) == 1 do id = redis.call('INCR', KEYS[1]) end
if ARGV[2] == '1' then redis.call('HSET', KEYS[2], id, ARGV[1]) end
return id
"""

# KEYS: agents, owners. ARGV: me, worker key prefix, ids... Claims every listed agent no live
# worker holds: returns {id, snapshot, id, snapshot, ...} and the owners that held the others.
CLAIM_MANY = """
local out, busy = {}, {}
for i = 3, #ARGV do
  local id = ARGV[i]
  local owner = redis.call('HGET', KEYS[2], id)
  if owner and owner ~= ARGV[1] and redis.call('EXISTS', ARGV[2] .. owner) == 1 then
    busy[#busy + 1] = owner
  else
    local doc = redis.call('HGET', KEYS[1], id)
    if doc then
      redis.call('HSET', KEYS[2], id, ARGV[1])
      out[#out + 1] = id
      out[#out + 1] = doc
    end
  end
end
return {out, busy}
"""

# KEYS: deadlines. ARGV: now, limit. The ids whose deadline is due.
DUE = """
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
"""
