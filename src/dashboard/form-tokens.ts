// One-time form tokens: a creation claims its form's token in its own transaction, so the same form sent twice
// makes one thing and goes to the first answer's page.
import { randomBytes } from 'node:crypto'
import { allWritten } from '../db/written'
import { escapeHtml } from '../web/render'
import type { FormTokenRow, FormTokenRows } from './storage/contract'

export const FORM_TOKEN_FIELD = '_once'
/** How long a used token is remembered (a form page left open longer may be sent once more). */
export const FORM_TOKEN_KEPT_MS = 24 * 3600_000
const SHAPE = /^[A-Za-z0-9_-]{22}$/
/** Fields left out of a form's fingerprint: the CSRF token and the token itself, and passwords (never hashed fast). */
const UNPRINTED = new Set(['_csrf', FORM_TOKEN_FIELD, 'password'])

/** A form as sent: its token, and a hash of the rest. */
export interface SentForm {
  token: string
  fingerprint: string
}

/** Thrown by claim() inside a creation's transaction: the form was sent before (undoes the creation). */
export class RepeatedForm extends Error {
  /** Where the first answer went, or null when another session (or a visitor) sent it. */
  constructor(readonly result: string | null) {
    super('this form was sent already')
    this.name = 'RepeatedForm'
  }
}

export function createFormTokens<Tx>(deps: { rows: FormTokenRows<Tx>; clock: () => number }) {
  const { rows, clock } = deps
  /** undefined: not sent before; else where the first answer went (null: not this session's). */
  const before = (row: FormTokenRow | null, sent: SentForm, sessionId: number | null): string | null | undefined => {
    if (!row || row.fingerprint !== sent.fingerprint) return undefined
    return row.session_id === sessionId ? row.result : null
  }

  return {
    /** A new token for a form. */
    issue: () => randomBytes(16).toString('base64url'),
    /** The hidden field carrying a new token. */
    field(token = randomBytes(16).toString('base64url')) {
      return `<input type="hidden" name="${FORM_TOKEN_FIELD}" value="${escapeHtml(token)}">`
    },
    /** The token a form was sent with and its fingerprint, or null (no token, or not one in shape: not protected). */
    of(fields: URLSearchParams): SentForm | null {
      const token = fields.get(FORM_TOKEN_FIELD)
      if (token === null || !SHAPE.test(token)) return null
      const h = new Bun.CryptoHasher('sha256')
      for (const [k, v] of fields) if (!UNPRINTED.has(k)) h.update(`${k.length}:${k}${v.length}:${v}`)
      return { token, fingerprint: h.digest('base64url') }
    },
    /**
     * Checked before doing the work: undefined when this form was not sent before; else where its first
     * answer went (null: not this session's). The claim in the transaction is what holds under a race.
     */
    async used(sent: SentForm | null, sessionId: number | null): Promise<string | null | undefined> {
      return sent ? before(await rows.byToken(sent.token), sent, sessionId) : undefined
    },
    /**
     * Inside the creation's transaction (`tx`, as the service's `within` hands it): takes the token for this
     * creation, or throws RepeatedForm when the same form took it before (which undoes the transaction). Also
     * removes a few tokens older than FORM_TOKEN_KEPT_MS. What it gives (at once on SQLite, a promise on
     * PostgreSQL: db/written.ts) is the `within`'s to return, not to await.
     */
    claim(tx: Tx, sent: SentForm | null, sessionId: number | null, result: string): unknown {
      if (!sent) return undefined
      const now = clock()
      return allWritten([
        rows.claimIn(tx, sent.token, sessionId, sent.fingerprint, now, result, (tx, outcome) => {
          if (outcome.claimed) return allWritten([rows.removeOld(now - FORM_TOKEN_KEPT_MS, tx)])
          const first = before(outcome.first, sent, sessionId)
          if (first !== undefined) throw new RepeatedForm(first)
          // the token of another form's content: that one is not protected
        }),
      ])
    },
  }
}
export type FormTokens = ReturnType<typeof createFormTokens<unknown>>
