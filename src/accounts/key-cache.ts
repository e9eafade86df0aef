// Callers by key hash, so that a request with a key costs a hash and a map lookup, not a query: a hit reads
// only memory and keysChanged() (synchronous), never the database. Design notes: ARCHITECTURE (accounts).
import type { Caller, Scope } from '../kernel/caller'
import type { AccountReads, KeyWithAccount } from './storage/contract'

// An entry lives KEY_CACHE_MS at most and the map holds KEY_CACHE_MAX (the oldest go first).
const KEY_CACHE_MS = 5_000
const KEY_CACHE_MAX = 10_000

export function toCaller(row: KeyWithAccount, via: Caller['via']): Caller {
  return {
    accountId: row.account_id,
    accountName: row.account_name,
    admin: row.admin === 1,
    scopes: new Set(row.scopes.split(',') as Scope[]),
    keyId: row.id,
    via,
  }
}

/** Only keys that worked are kept, so unknown keys cannot fill it; `forget` after every committed change. */
export function createKeyCache(store: Pick<AccountReads, 'keysChanged' | 'activeKeyByHash'>) {
  const cache = new Map<string, { caller: Caller; at: number }>()
  // Moves with every change of keys or accounts made here: a lookup begun before it does not cache its answer.
  let generation = 0

  /** Drops every cached caller: after a change to keys or accounts has committed. */
  function forget() {
    generation++
    cache.clear()
  }

  /** The caller of an active key's hash (null: unknown, revoked, or its account disabled). */
  async function callerByHash(hash: string, now: number): Promise<Caller | null> {
    // A change committed elsewhere (another connection, another node) empties it at the next request.
    if (store.keysChanged()) forget()
    const hit = cache.get(hash)
    if (hit && now - hit.at < KEY_CACHE_MS) return hit.caller
    cache.delete(hash)
    const seen = generation
    const row = await store.activeKeyByHash(hash)
    if (!row) return null
    const caller = toCaller(row, 'key')
    if (seen !== generation || store.keysChanged()) {
      forget()
      return caller
    }
    if (cache.size >= KEY_CACHE_MAX) cache.delete(cache.keys().next().value!)
    cache.set(hash, { caller, at: now })
    return caller
  }

  return { forget, callerByHash }
}
