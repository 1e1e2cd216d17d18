-- Shared by the latch scripts (spliced in at build time where a script says @include).
-- Every latch script takes these KEYS first (latch_set.lua and latch_count_down.lua a reply
-- record after them):
-- @key count  (string: a non-negative integer; 0 = reached, kept as a marker)
-- @key ids    (set: the --id values that have counted down; same expiry as the count)

-- Redisson's RCountDownLatch (ARGV redisson = '1', KeyLayout::redisson_latch): the count
-- is deleted at zero, and its channel gets Redisson's messages, "0" at zero and "1" for a
-- new count, with PUBLISH (Redisson on a standalone server or Sentinel) and SPUBLISH (its
-- sharded mode on a Redis 7 cluster): each Java client listens with one of the two.
-- @needs-arg redisson
local redisson = A.redisson == '1'

-- Tells the latch's waiters, rlock's ('zero' on rlock's channel) or Redisson's.
local function announce(channel, rlock_word, redisson_word)
  if not redisson then return publish(channel, rlock_word) end
  redis.call('PUBLISH', channel, redisson_word)
  if sharded_pubsub ~= false then redis.pcall('SPUBLISH', channel, redisson_word) end
end

-- Every write a latch script may make, checked against the caller's ACL first (Redis 7),
-- so that a refusal comes before the first write and changes nothing.
local function check_rights(channel)
  if not redis.acl_check_cmd then return nil end
  local needs = {
    {'SET', K.count, '1'}, {'DECRBY', K.count, '1'}, {'PEXPIRE', K.count, '1'}, {'DEL', K.count},
    {'SADD', K.ids, 'm'}, {'PEXPIRE', K.ids, '1'}, {'DEL', K.ids},
    {'SPUBLISH', channel, 'x'},
  }
  if redisson then needs[#needs + 1] = {'PUBLISH', channel, 'x'} end
  return first_denied(needs) or first_denied({
    {'TYPE', K.count}, {'GET', K.count}, {'PTTL', K.count}, {'EXISTS', K.ids},
    {'SISMEMBER', K.ids, 'm'},
  })
end

-- The checks every latch script starts with (ACL rights when `channel` is given, types, a
-- well-formed count): nothing is written before they pass. Returns err, count (nil when
-- the latch does not exist).
local function check_latch_keys(channel)
  local denied
  if channel then
    denied = check_rights(channel)
  else
    denied = first_denied({{'TYPE', K.count}, {'GET', K.count}, {'PTTL', K.count}, {'SCARD', K.ids},
      {'SSCAN', K.ids, '0'}})
  end
  if denied then return denied end
  local err = bad_type(K.count, 'string') or bad_type(K.ids, 'set')
  if err then return err end
  local stored = redis.call('GET', K.count)
  if not stored then return nil, nil end
  -- Whole numbers a double counts exactly (2^53 - 1 at most): a larger one (another
  -- program's) is malformed, never rounded or wrapped.
  if not string.match(stored, '^%d+$') or #stored > 16 or tonumber(stored) > 9007199254740991 then
    return redis.error_reply('MALFORMED ' .. K.count)
  end
  return nil, tonumber(stored)
end
