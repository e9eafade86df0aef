// API keys' material and rules: random codes, the key's hash and prefix, labels and scopes.
import { SCOPES, type Scope } from '../kernel/caller'
import { AppError } from '../kernel/errors'
import type { NewKey } from './storage/contract'

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
// Random bytes drawn 4 KiB at a time from the system's CSPRNG (every creation draws a code), each used once.
const pool = new Uint8Array(4096)
let pooled = 0
function randomByte(): number {
  if (pooled === 0) {
    crypto.getRandomValues(pool)
    pooled = pool.length
  }
  const b = pool[--pooled]!
  pool[pooled] = 0
  return b
}

export function randomBase62(length: number): string {
  // Rejection sampling keeps every character equally likely (256 is not a multiple of 62).
  let out = ''
  while (out.length < length) {
    const b = randomByte()
    if (b < 248) out += BASE62[b % 62]
  }
  return out
}

// Every API request hashes its key: Bun's one-shot SHA-256 is the same digest at a quarter of node:crypto's cost.
export const hashKey = (key: string) => Bun.SHA256.hash(key, 'hex')

export const MAX_LABEL_LENGTH = 200

// Characters that would let a label forge lines or columns in `key list` (tab, newline, the other C0 and C1
// controls, the Unicode line and paragraph separators) or reorder what is shown after it (bidi controls).
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, 'g')

/** A key label as given: at most MAX_LABEL_LENGTH characters, none of them a control character. */
export function validateLabel(label: string): string {
  if ([...label].length > MAX_LABEL_LENGTH)
    throw new AppError(400, 'invalid_parameter', `The key label must be at most ${MAX_LABEL_LENGTH} characters.`)
  if (UNPRINTABLE.test(label))
    throw new AppError(
      400,
      'invalid_parameter',
      'The key label must not contain control characters (tab, newline and the like): keys are listed one a line.',
    )
  return label
}

/**
 * Text stored before labels were checked, shown on one line of one column: a backslash and every
 * character validateLabel refuses are written as escapes (\t, \n, \r, \\, \u{…}).
 */
export function printable(text: string): string {
  const named: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' }
  return text
    .replace(/\\/g, '\\\\')
    .replace(UNPRINTABLE_ALL, (c) => named[c] ?? `\\u{${c.codePointAt(0)!.toString(16)}}`)
}

/**
 * Keys an account may hold through the dashboard: at most MAX_ACTIVE_KEYS not revoked, and the
 * REVOKED_KEYS_KEPT most recently revoked (older revoked keys are deleted when a key is created there), so
 * that creating and revoking in a loop cannot grow the table without bound.
 */
export const MAX_ACTIVE_KEYS = 100
export const REVOKED_KEYS_KEPT = 100

export const KEY_PREFIX_LENGTH = 11 // "lbk_" + 7 characters

export function parseScopes(text: string | undefined): Scope[] {
  if (!text || text === 'all') return [...SCOPES]
  const scopes = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  for (const s of scopes)
    if (!(SCOPES as readonly string[]).includes(s))
      throw new AppError(400, 'invalid_parameter', `Unknown scope "${s}": scopes are ${SCOPES.join(', ')}.`)
  if (scopes.length === 0) throw new AppError(400, 'invalid_parameter', 'At least one scope is needed.')
  return [...new Set(scopes)] as Scope[]
}

/** A new key as the storage keeps it (its prefix and hash), and the key itself, shown once. */
export function newKey(scopes: Scope[], label: string): { key: string; stored: NewKey } {
  const key = `lbk_${randomBase62(40)}`
  const stored = { prefix: key.slice(0, KEY_PREFIX_LENGTH), hash: hashKey(key), scopes: scopes.join(','), label }
  return { key, stored }
}
