-- Ends a delivery iff its lease is still this delivery's (token): 'ack' deletes the item,
-- 'nack' makes it due again after a pause (or moves it to the dead letters when it has
-- had its maximum of deliveries), 'unrun' (the consumer did not run it: its lease came too
-- late) makes it due again without counting the delivery. A consumer whose lease ran out is refused: the item may
-- be with another consumer now, and completes only once. A retry of a finish that was
-- applied (its reply lost) finds the token among the finished deliveries and is told done.
-- KEYS: see queue_common.lua.
-- @arg channel   queue channel
-- @arg id        item id
-- @arg token     lease token
-- @arg how       'ack' | 'nack' | 'unrun'
-- @arg retry_ms  nack, unrun: ms until the item is due again
-- Reply: {1} done; {0} the lease is not this delivery's: nothing changed;
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change otherwise.
-- @include common.lua
-- @include queue_common.lua
local err = check_queue_keys(A.channel)
if err then return err end
local now = server_time().ms
reclaim(now, A.channel)
local id = A.id
if not lease_is(id, A.token) then
  -- Finished already (a retry after a lost reply): the token stays until the consumer
  -- forgets it (queue_forget.lua) once a reply reached it, as the reply of this very retry
  -- may be lost too.
  if redis.call('ZSCORE', K.finished, A.token) then return {1} end
  return {0}
end
local m = read_meta(id)
if not m then return redis.error_reply('MALFORMED ' .. K.metadata) end
if A.how == 'ack' then
  drop_item(id, nil)
else
  if A.how == 'unrun' and m.deliveries > 0 then
    m.deliveries = m.deliveries - 1
    write_meta(id, m)
  end
  reschedule(id, m, now + tonumber(A.retry_ms), A.channel)
end
remember_finished(A.token, now)
return {1}
