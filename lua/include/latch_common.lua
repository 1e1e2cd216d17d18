-- Shared by the latch scripts (spliced in at build time where a script says @include).
-- Every latch script takes the same KEYS:
--   KEYS[1] count (string: a non-negative integer; 0 = reached, kept as a marker)
--   KEYS[2] ids (set: the --id values that have counted down; same expiry as KEYS[1])

-- Every write a latch script may make, checked against the caller's ACL first (Redis 7),
-- so that a refusal comes before the first write and changes nothing.
local function check_rights(channel)
  if not redis.acl_check_cmd then return nil end
  local needs = {
    {'SET', KEYS[1], '1'}, {'DECRBY', KEYS[1], '1'}, {'PEXPIRE', KEYS[1], '1'}, {'DEL', KEYS[1]},
    {'SADD', KEYS[2], 'm'}, {'PEXPIRE', KEYS[2], '1'}, {'DEL', KEYS[2]},
    {'SPUBLISH', channel, 'x'},
  }
  return first_denied(needs) or first_denied({
    {'TYPE', KEYS[1]}, {'GET', KEYS[1]}, {'PTTL', KEYS[1]}, {'EXISTS', KEYS[2]},
    {'SISMEMBER', KEYS[2], 'm'},
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
    denied = first_denied({{'TYPE', KEYS[1]}, {'GET', KEYS[1]}, {'PTTL', KEYS[1]}, {'SCARD', KEYS[2]},
      {'SSCAN', KEYS[2], '0'}})
  end
  if denied then return denied end
  local err = bad_type(KEYS[1], 'string') or bad_type(KEYS[2], 'set')
  if err then return err end
  local stored = redis.call('GET', KEYS[1])
  if not stored then return nil, nil end
  -- Whole numbers a double counts exactly (2^53 - 1 at most): a larger one (another
  -- program's) is malformed, never rounded or wrapped.
  if not string.match(stored, '^%d+$') or #stored > 16 or tonumber(stored) > 9007199254740991 then
    return redis.error_reply('MALFORMED ' .. KEYS[1])
  end
  return nil, tonumber(stored)
end
