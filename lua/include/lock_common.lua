-- Shared by the lock scripts (spliced in at build time where a script says @include).
-- An error reply when `key` holds another type than `want`; nil when it fits or is absent.
local function bad_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('BADTYPE ' .. t .. ' ' .. key)
  end
end

-- Stores and returns the next fencing token: max(last + 1, server microseconds), so it
-- never goes backwards, even when the stored counter was lost.
local function next_fence(fence_key, last)
  local now = redis.call('TIME')
  local fence = math.max(last + 1, tonumber(now[1]) * 1000000 + tonumber(now[2]))
  redis.call('SET', fence_key, string.format('%.0f', fence))
  return fence
end
