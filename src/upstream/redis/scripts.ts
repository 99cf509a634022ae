/**
 * The Lua scripts the shared token store runs (token/redisTokenStore.ts,
 * token/refreshLock.ts): each atomic on the server, and safe on any key, whatever
 * someone else put there. A key of another type, or a string longer than the caller's
 * bound, is answered by a code and never sent: its bytes stay in Redis. (The live poll
 * leases, live/redisLease.ts, take and release theirs with TAKE_IF_UNCHANGED and
 * DELETE_IF_HOLDS, and read theirs the same way.)
 */

/** What READ_BOUNDED answers for a key of another type, or a string over the bound. */
export const WRONG_TYPE = 1;
export const TOO_LONG = 2;

/** KEYS[1], ARGV[1] the longest value read: nil when free, WRONG_TYPE, TOO_LONG, else { value, PTTL }. */
export const READ_BOUNDED = `
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return false end
if kind ~= 'string' then return ${WRONG_TYPE} end
if redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[1]) then return ${TOO_LONG} end
return { redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]) }`;

/**
 * Sets KEYS[1] to ARGV[2] for ARGV[3] ms if it still holds what was read (ARGV[1]: ''
 * free, '*' another type or over the bound ARGV[4], or the value), or is free now: 1 if
 * set, else 0.
 */
export const TAKE_IF_UNCHANGED = `
local kind = redis.call('TYPE', KEYS[1])['ok']
local free = kind == 'none'
if not free then
  if kind ~= 'string' or redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[4]) then free = ARGV[1] == '*'
  else free = redis.call('GET', KEYS[1]) == ARGV[1] end
end
if not free then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

/** Deletes KEYS[1] if it still holds ARGV[1]: compare and delete, in one round trip. */
export const DELETE_IF_HOLDS = `if redis.call('TYPE', KEYS[1])['ok'] == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** What READ_BOUNDED answered, as ioredis gives it. */
export type BoundedRead = null | typeof WRONG_TYPE | typeof TOO_LONG | [value: string, pttl: number];
