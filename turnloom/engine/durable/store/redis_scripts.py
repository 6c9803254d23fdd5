"""The Lua scripts of the shared Redis store: each step of the lease protocol is one script,
so Redis runs it atomically and no two workers can both take an agent.

Keys (`P` is the store's prefix): `P:agents` (hash: id → the snapshot's head, see `parts`),
`P:tails` (hash: id → the dialog's tail, its last part, when it has one), `P:dialog:ID` (list:
agent ID's sealed dialog parts, in order, before the tail), `P:constant` (hash: id → the
entries its head leaves out, written once; data of the previous layout has none, its heads are
whole), `P:owners` (hash: id → the worker
holding it), `P:deadlines` (sorted set: id scored by its pause deadline), `P:next_id`
(counter) and `P:worker:NAME` (a key with an expiry: worker NAME is alive while it exists). An
agent is held by a worker when its `owners` field names a worker whose key exists. An agent's
parts, as `parts.assemble` takes them, are its sealed ones then its tail.

A dialog key is read with `redis.pcall`: one that another program left under the prefix, not a
list, makes its agent unreadable (reported as a `broken` one), not the whole script fail.
"""

# KEYS: the store's keys, its id counter first. ARGV: the Redis type each must have (a key that
# does not exist is fine). Returns {{i, type, ...} for each key of another type} and, when the
# counter holds something INCR does not take (an integer, at most 18 digits here), its first
# bytes. Reads only: run once when the store is opened, before anything is written.
CHECK = """
local wrong = {}
for i, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key).ok
  if kind ~= 'none' and kind ~= ARGV[i] then
    wrong[#wrong + 1] = i
    wrong[#wrong + 1] = kind
  end
end
if redis.call('TYPE', KEYS[1]).ok == 'string' then
  local head = redis.call('GETRANGE', KEYS[1], 0, 31)
  local short = redis.call('STRLEN', KEYS[1]) <= 18
  if not (short and (head == '0' or string.match(head, '^-?[1-9]%d*$'))) then
    return {wrong, head}
  end
end
return {wrong}
"""

# KEYS: agents, owners, tails, constant. ARGV: id, me, worker key prefix, adopt ("1": claim
# even if not stored), dialog key prefix. Returns {status, head, owner or '', sealed parts,
# tail or '', constant entries or ''}; {'broken', the dialog key's type} for a stored agent whose
# dialog key is no list (not claimed).
CLAIM = """
local doc = redis.call('HGET', KEYS[1], ARGV[1])
if not doc and ARGV[4] ~= '1' then return {'missing'} end
local parts = redis.pcall('LRANGE', ARGV[5] .. ARGV[1], 0, -1)
if parts.err then
  if doc then return {'broken', redis.call('TYPE', ARGV[5] .. ARGV[1]).ok} end
  parts = {}  -- adopted: its first write replaces the key (from part 0)
end
local tail = redis.call('HGET', KEYS[3], ARGV[1]) or ''
local constant = redis.call('HGET', KEYS[4], ARGV[1]) or ''
local owner = redis.call('HGET', KEYS[2], ARGV[1])
if owner and owner ~= ARGV[2] and redis.call('EXISTS', ARGV[3] .. owner) == 1 then
  return {'busy', doc or '', owner, parts, tail, constant}
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return {'claimed', doc or '', '', parts, tail, constant}
"""

# KEYS: agents, owners, deadlines, tails, constant. ARGV: me, dialog key prefix, the writes'
# table: one flat msgpack array (Redis's own `cmsgpack` reads it, str types only) of eight
# values per agent: id, head (the index in ARGV of the agent's head), deadline ("" = none),
# base (-1 = its parts stay as they are), first (the index in ARGV of its first sealed part
# from base on) and count (how many), tail (the index in ARGV of its tail, 0 = none), constant
# (the index in ARGV of its constant entries, 0 = they stay); then the heads, tails, sealed
# parts and constant entries themselves, one argument each. Each is handed to Lua once, as an
# argument, not again by `unpack` (a script's cost grows with the bytes Lua makes strings of:
# 22 agents, about 26 KB, 95 us a call against 130 with them in the table), and the table is
# flat, not an array per agent (64 agents: 158 us a call against 192). Writes the agents this
# worker holds (head, constant entries, tail, sealed parts from `base` on, deadline index) and
# returns the ids of the others, untouched. One HMGET, one HSET of heads, at most one HSET of
# constant entries, one HSET and one HDEL of tails and one ZREM and one ZADD whatever the
# count; an LTRIM (or DEL) and an RPUSH only for an agent whose sealed parts change (the caller
# keeps a call under `unpack`'s limit).
SAVE_MANY = """
local w = cmsgpack.unpack(ARGV[3])
local n = #w / 8
local ids = {}
for i = 1, n do ids[i] = w[i * 8 - 7] end
local owners = redis.call('HMGET', KEYS[2], unpack(ids))
local refused, docs, gone, due, tails, untailed, constants = {}, {}, {}, {}, {}, {}, {}
for i = 1, n do
  local at = i * 8 - 8
  local id = w[at + 1]
  if owners[i] == ARGV[1] then
    docs[#docs + 1] = id
    docs[#docs + 1] = ARGV[w[at + 2]]
    local constant = w[at + 8]
    if constant > 0 then
      constants[#constants + 1] = id
      constants[#constants + 1] = ARGV[constant]
    end
    local deadline = w[at + 3]
    if deadline == '' then
      gone[#gone + 1] = id
    else
      due[#due + 1] = deadline
      due[#due + 1] = id
    end
    local base = w[at + 4]
    if base >= 0 then
      local first, count, tail = w[at + 5], w[at + 6], w[at + 7]
      if count > 0 or base == 0 then
        local key = ARGV[2] .. id
        if base == 0 then redis.call('DEL', key) else redis.call('LTRIM', key, 0, base - 1) end
        if count > 0 then redis.call('RPUSH', key, unpack(ARGV, first, first + count - 1)) end
      end
      if tail == 0 then
        untailed[#untailed + 1] = id
      else
        tails[#tails + 1] = id
        tails[#tails + 1] = ARGV[tail]
      end
    end
  else
    refused[#refused + 1] = id
  end
end
if #docs > 0 then redis.call('HSET', KEYS[1], unpack(docs)) end
if #constants > 0 then redis.call('HSET', KEYS[5], unpack(constants)) end
if #tails > 0 then redis.call('HSET', KEYS[4], unpack(tails)) end
if #untailed > 0 then redis.call('HDEL', KEYS[4], unpack(untailed)) end
if #gone > 0 then redis.call('ZREM', KEYS[3], unpack(gone)) end
if #due > 0 then redis.call('ZADD', KEYS[3], unpack(due)) end
return refused
"""

# KEYS: agents, owners, deadlines, tails, constant. ARGV: id, me, dialog key prefix. Refused
# (0) only if another worker holds it.
DELETE = """
local owner = redis.call('HGET', KEYS[2], ARGV[1])
if owner and owner ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
redis.call('DEL', ARGV[3] .. ARGV[1])
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
# Only fields of digits count (another program's "1.5" or "1e9" would make the counter a value
# INCR refuses), up to 15 (exact in Lua's doubles, and written without an exponent). A counter
# INCR refuses (not an integer) gives {error, its type, its first bytes}, nothing written.
ALLOCATE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  local top = 0
  for _, field in ipairs(redis.call('HKEYS', KEYS[3])) do
    if #field <= 15 and string.match(field, '^%d+$') then
      local n = tonumber(field)
      if n > top then top = n end
    end
  end
  redis.call('SET', KEYS[1], string.format('%d', top))
end
local id
repeat
  id = redis.pcall('INCR', KEYS[1])
  if type(id) == 'table' then
    local kind = redis.call('TYPE', KEYS[1]).ok
    local head = kind == 'string' and redis.call('GETRANGE', KEYS[1], 0, 31) or ''
    return {id.err, kind, head}
  end
until redis.call('HEXISTS', KEYS[3], id) == 0
if ARGV[2] == '1' then redis.call('HSET', KEYS[2], id, ARGV[1]) end
return id
"""

# KEYS: agents, owners, tails, constant. ARGV: me, worker key prefix, dialog key prefix, ids...
# Claims every listed agent no live worker holds: returns {id, head, sealed parts, tail or '',
# constant entries or '', ...}, the owners that held the others, and {id, type, ...} of those
# whose dialog key is no list (not claimed).
CLAIM_MANY = """
local out, busy, broken = {}, {}, {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local owner = redis.call('HGET', KEYS[2], id)
  if owner and owner ~= ARGV[1] and redis.call('EXISTS', ARGV[2] .. owner) == 1 then
    busy[#busy + 1] = owner
  else
    local doc = redis.call('HGET', KEYS[1], id)
    if doc then
      local parts = redis.pcall('LRANGE', ARGV[3] .. id, 0, -1)
      if parts.err then
        broken[#broken + 1] = id
        broken[#broken + 1] = redis.call('TYPE', ARGV[3] .. id).ok
      else
        redis.call('HSET', KEYS[2], id, ARGV[1])
        out[#out + 1] = id
        out[#out + 1] = doc
        out[#out + 1] = parts
        out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
        out[#out + 1] = redis.call('HGET', KEYS[4], id) or ''
      end
    end
  end
end
return {out, busy, broken}
"""

# KEYS: agents, tails, constant. ARGV: id, dialog key prefix. The agent's head, sealed parts,
# tail (or '') and constant entries (or ''), read without a claim; {the dialog key's type} when
# it is no list.
READ = """
local doc = redis.call('HGET', KEYS[1], ARGV[1])
if not doc then return false end
local parts = redis.pcall('LRANGE', ARGV[2] .. ARGV[1], 0, -1)
if parts.err then return {redis.call('TYPE', ARGV[2] .. ARGV[1]).ok} end
local tail = redis.call('HGET', KEYS[2], ARGV[1]) or ''
return {doc, parts, tail, redis.call('HGET', KEYS[3], ARGV[1]) or ''}
"""

# KEYS: deadlines. ARGV: now, limit. The ids whose deadline is due.
DUE = """
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
"""
