// What a form's answer hands to the page it redirects to (post → 303 → get), kept on the server: a new
// API key or webhook secret (shown once), a refused form's values and messages (never a password), the
// home form's result. Only in this process's memory: a key's secret must never reach the database or a
// backup, where only its hash is kept. Each entry is bound to an owner (a session, a sign-in form, a
// visitor's home form) and to a kind, behind a random id the redirect's URL carries; it is read once and
// then gone, and unread it is gone after FLASH_TTL_MS. Bounded: FLASH_PER_OWNER an owner, FLASH_MAX
// entries and FLASH_MAX_CHARS (of their JSON) in all, the oldest going first. The pages keep two stores,
// one for sessions and one for visitors who are not signed in, so that a flood of anonymous forms cannot
// push a signed-in person's new key out before it is shown.
import { randomBytes } from 'node:crypto'

export const FLASH_TTL_MS = 5 * 60_000
export const FLASH_PER_OWNER = 10
export const FLASH_MAX = 10_000
export const FLASH_MAX_CHARS = 8 * 1024 * 1024
const ID = /^[A-Za-z0-9_-]{22}$/

interface Entry {
  owner: string
  kind: string
  value: unknown
  chars: number
  expires: number
}

export function createFlash(clock: () => number = Date.now) {
  // In insertion order, which is expiry order (one lifetime for all): expired ones are at the head.
  const entries = new Map<string, Entry>()
  const byOwner = new Map<string, string[]>()
  let chars = 0

  function drop(id: string) {
    const e = entries.get(id)
    if (!e) return
    entries.delete(id)
    chars -= e.chars
    const ids = byOwner.get(e.owner)!
    ids.splice(ids.indexOf(id), 1)
    if (ids.length === 0) byOwner.delete(e.owner)
  }

  function sweep(now: number) {
    for (const [id, e] of entries) {
      if (e.expires > now) break
      drop(id)
    }
  }

  const newId = () => randomBytes(16).toString('base64url')

  return {
    /** An id for put() chosen before the value exists (a redirect's URL written inside a transaction). */
    newId,

    /** Keeps `value` for `owner` until it is taken or expires; returns its id. */
    put(owner: string, kind: string, value: unknown, id = newId()): string {
      const now = clock()
      sweep(now)
      const size = owner.length + kind.length + JSON.stringify(value).length
      drop(id)
      const ids = byOwner.get(owner) ?? []
      while (ids.length >= FLASH_PER_OWNER) drop(ids[0]!)
      while (entries.size > 0 && (entries.size >= FLASH_MAX || chars + size > FLASH_MAX_CHARS)) drop(entries.keys().next().value!)
      entries.set(id, { owner, kind, value, chars: size, expires: now + FLASH_TTL_MS })
      chars += size
      ids.push(id)
      byOwner.set(owner, ids)
      return id
    },

    /**
     * The value behind `id` when it is this owner's and of this kind, once: then it is gone. Null for none,
     * shown already, expired, or another owner's (which is left alone: a guessed id destroys nothing).
     */
    take<T>(owner: string, kind: string, id: string | null | undefined): T | null {
      if (!id || !ID.test(id)) return null
      const e = entries.get(id)
      if (!e || e.owner !== owner || e.kind !== kind) return null
      drop(id)
      return e.expires > clock() ? (e.value as T) : null
    },

    /** Entries held, and the characters of their JSON (for tests and bounds). */
    get size() {
      return entries.size
    },
    get chars() {
      return chars
    },
  }
}
export type Flash = ReturnType<typeof createFlash>
