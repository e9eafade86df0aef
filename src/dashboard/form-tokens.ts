// One-time form tokens: a form that creates something (an API key, a webhook endpoint, a link — in the
// dashboard and on the home page) carries a random token in the hidden field FORM_TOKEN_FIELD, new with
// each page. The creation claims the token inside the transaction that inserts the new row, with the page
// its answer redirects to: the same form sent again (a double click, back and send again, a browser that
// retries) finds it taken, so its transaction is undone and nothing is made twice; it is sent to the
// first answer's page instead. "The same form" is the same token with the same fields: a page brought
// back from the browser's cache and filled in anew carries an old token, but makes what it asks for.
// A form sent without a token (a script) is not protected. Used tokens go with their session, or after
// FORM_TOKEN_KEPT_MS.
import { randomBytes } from 'node:crypto'
import type { Db } from '../db'
import { escapeHtml } from '../pages/render'
import { createFormTokenStore } from './store'

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

export function createFormTokens(deps: { db: Db; clock: () => number }) {
  const { clock } = deps
  const store = createFormTokenStore(deps.db)
  /** undefined: not sent before; else where the first answer went (null: not this session's). */
  const before = (sent: SentForm, sessionId: number | null): string | null | undefined => {
    const row = store.byToken(sent.token)
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
    used: (sent: SentForm | null, sessionId: number | null) => (sent ? before(sent, sessionId) : undefined),
    /**
     * Inside the creation's transaction: takes the token for this creation, or throws RepeatedForm when the
     * same form took it before (which undoes the transaction). Also removes a few tokens older than
     * FORM_TOKEN_KEPT_MS.
     */
    claim(sent: SentForm | null, sessionId: number | null, result: string) {
      if (!sent) return
      const now = clock()
      if (!store.insert(sent.token, sessionId, sent.fingerprint, now, result)) {
        const first = before(sent, sessionId)
        if (first !== undefined) throw new RepeatedForm(first)
        return // the token of another form's content: that one is not protected
      }
      store.removeOld(now - FORM_TOKEN_KEPT_MS)
    },
  }
}
export type FormTokens = ReturnType<typeof createFormTokens>
