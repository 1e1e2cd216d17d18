-- Releases a lock whoever holds it, writer and readers (for stuck locks), and passes it to
-- the waiters at the head, or announces it free (KEYS: see lock_common.lua, request
-- unused, then reply).
-- @arg channel          lock channel
-- @arg claim_ms         claim ms
-- @arg reply_ttl        ms the reply record is kept
-- @arg foreign_channel  Redisson's lock channel or "" (see foreign_channel in lock_common.lua)
-- @arg [floor]          the least token to hand the next waiter, or "" (a quorum's: see
--                       fence_floor in lock_common.lua)
-- Reply: {owner1, count1, note1, ...} of the holders it removed (empty when it was free;
--        note: what the exclusive hold said of itself, "" for none and for readers);
--        error "BADTYPE <type> <key>" / "MALFORMED <key>" and no change when the keys are
--        not a well-formed lock.
-- On a quorum (prim/lock_quorum.cpp):
-- @quorum union
-- @include common.lua
-- @include waiter_queue.lua
-- @include lock_common.lua
-- @key reply  this request's reply record (see once in common.lua)
return once(K.reply, A.reply_ttl, function()
local err = check_lock_keys(A.channel)
if err then return err end
purge_readers(server_time().ms)
-- The writer comes first in holders_reply's list, then the readers (who have no note).
local listed, writers = holders_reply({}), 2 * redis.call('HLEN', K.lock)
local noted = redis.call('HGET', K.notes, 'owner')
local holders = {}
for i = 1, #listed, 2 do
  local note = ''
  if i <= writers and listed[i] == noted then note = redis.call('HGET', K.notes, 'note') or '' end
  holders[#holders + 1] = listed[i]
  holders[#holders + 1] = listed[i + 1]
  holders[#holders + 1] = note
end
redis.call('DEL', K.grant, K.exec, K.reader_grants)
if #holders > 0 then
  redis.call('DEL', K.lock, K.readers, K.reader_expiries)
  drop_hold_note()
  tell_holders(A.channel)
  pass_on(A.channel, A.claim_ms)
end
return holders
end, function(r) return #r > 0 end)
