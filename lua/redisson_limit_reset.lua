-- Clears Redisson's RRateLimiter (--layout redisson): what RedissonRateLimiter.delete()
-- deletes, the config, the OVERALL value and log, and one client's value and log.
-- @key config          the bare name: see redisson_limit_decide.lua
-- @key value           {name}:value
-- @key client_value    {name}:value:<client> ({name}:value when there is no client)
-- @key permits         {name}:permits
-- @key client_permits  {name}:permits:<client> ({name}:permits when there is no client)
-- @key reply           this request's reply record (see once in common.lua)
-- @arg reply_ttl       ms the reply record is kept
-- Reply: {config existed 0|1, the client's keys deleted 0|1}; error "BADTYPE <type> <key>"
--        / NOPERM and no change when the name is some other object (an RLock's hash, ...).
-- @include common.lua
return once(K.reply, A.reply_ttl, function()
local denied = first_denied({{'DEL', K.config, K.value, K.permits}})
  or first_denied({{'TYPE', K.config}, {'HMGET', K.config, 'f'}, {'EXISTS', K.config}})
if denied then return denied end
local err = first_bad_type({{K.config, 'hash'}, {K.value, 'string'},
                            {K.client_value, 'string'}, {K.permits, 'zset'},
                            {K.client_permits, 'zset'}})
if err then return err end
local existed = redis.call('EXISTS', K.config)
if existed == 1 then
  local f = redis.call('HMGET', K.config, 'rate', 'interval', 'type')
  if not f[1] and not f[2] and not f[3] then return redis.error_reply('BADTYPE hash ' .. K.config) end
end
local client = 0
if K.client_value ~= K.value then
  client = redis.call('DEL', K.client_value, K.client_permits) > 0 and 1 or 0
end
local others = redis.call('DEL', K.config, K.value, K.permits)
return {existed, client, others}
end, function(r) return r[3] > 0 or r[2] > 0 end)
