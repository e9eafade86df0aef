// What a form's answer hands to the page it redirects to (a secret shown once, a refused form), in the database,
// sealed under a key only the owner's browser can derive, read once, bounded per owner and pool.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'
import type { FlashRows } from './storage/contract'

export const FLASH_TTL_MS = 5 * 60_000
export const FLASH_PER_OWNER = 10
export const FLASH_MAX = 10_000
export const FLASH_MAX_CHARS = 8 * 1024 * 1024
const ID = /^[A-Za-z0-9_-]{22,64}$/
const IV_BYTES = 12
const TAG_BYTES = 16

/** The pool of an owner, by its first letter: "s" a session's, "o" a started sign-in's, else a visitor's. */
const poolOf = (owner: string) => (owner.startsWith('s') ? 0 : owner.startsWith('o') ? 2 : 1)
const hash = (what: string, text: string) =>
  createHash('sha256').update(`linkbox flash ${what}\u0000${text}`).digest('base64url')
const keyOf = (owner: string, id: string) => Buffer.from(hkdfSync('sha256', owner, id, 'linkbox flash value', 32))

function seal(owner: string, id: string, kind: string, json: string): Uint8Array {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', keyOf(owner, id), iv)
  cipher.setAAD(Buffer.from(kind))
  const body = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), body])
}

/** The value, or undefined when it does not open with this owner's key (another owner, a changed row). */
function open(owner: string, id: string, kind: string, sealed: Uint8Array): unknown {
  try {
    const b = Buffer.from(sealed)
    const decipher = createDecipheriv('aes-256-gcm', keyOf(owner, id), b.subarray(0, IV_BYTES))
    decipher.setAAD(Buffer.from(kind))
    decipher.setAuthTag(b.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
    const json = Buffer.concat([decipher.update(b.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
    return JSON.parse(json)
  } catch {
    return undefined
  }
}

/** What takeAny found: whether it was this owner's and kind, and whether it had expired. */
export type Taken<T> = { mine: true; expired: boolean; value: T } | { mine: false; expired: boolean; value: null }

export function createFlash(deps: {
  rows: FlashRows
  clock?: () => number
  bounds?: Partial<Record<0 | 1 | 2, { perOwner: number; rows: number; bytes: number }>>
}) {
  const { rows } = deps
  const clock = deps.clock ?? Date.now
  const boundsOf = (pool: 0 | 1 | 2) =>
    deps.bounds?.[pool] ?? { perOwner: FLASH_PER_OWNER, rows: FLASH_MAX, bytes: FLASH_MAX_CHARS }
  const newId = () => randomBytes(16).toString('base64url')

  return {
    /** An id for put() chosen before the value exists (a redirect's URL written inside a transaction). */
    newId,

    /** Keeps `value` for `owner` until it is taken or expires (`ttlMs`, default FLASH_TTL_MS); returns its id. */
    async put(owner: string, kind: string, value: unknown, id = newId(), ttlMs = FLASH_TTL_MS): Promise<string> {
      const pool = poolOf(owner) as 0 | 1 | 2
      const sealed = seal(owner, id, kind, JSON.stringify(value))
      const hashedOwner = hash('owner', owner)
      const size = hashedOwner.length + kind.length + sealed.length
      await rows.put(
        { id: hash('id', id), pool, owner: hashedOwner, kind, value: sealed, size, expires: clock() + ttlMs },
        boundsOf(pool),
      )
      return id
    },

    /**
     * The value behind `id` when it is this owner's and of this kind, once: then it is gone. Null for none,
     * shown already, expired, or another owner's (which is left alone: a guessed id destroys nothing).
     */
    async take<T>(owner: string, kind: string, id: string | null | undefined): Promise<T | null> {
      if (!id || !ID.test(id)) return null
      const row = await rows.take(hash('id', id), { owner: hash('owner', owner), kind })
      if (!row || row.expires <= clock()) return null
      const value = open(owner, id, kind, row.value)
      return value === undefined ? null : (value as T)
    },

    /**
     * The row behind `id` whoever's it is, once (a started sign-in: used once, whatever comes of it); null
     * when there is none. `mine` says whether it was this owner's and kind.
     */
    async takeAny<T>(owner: string, kind: string, id: string | null | undefined): Promise<Taken<T> | null> {
      if (!id || !ID.test(id)) return null
      const row = await rows.take(hash('id', id))
      if (!row) return null
      const expired = row.expires <= clock()
      const value =
        row.owner === hash('owner', owner) && row.kind === kind ? open(owner, id, kind, row.value) : undefined
      return value === undefined ? { mine: false, expired, value: null } : { mine: true, expired, value: value as T }
    },

    /** Removes what expired (a periodic job). */
    sweep: (now = clock()) => rows.sweep(now),
  }
}
export type Flash = ReturnType<typeof createFlash>
