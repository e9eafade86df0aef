// Dashboard sign-in and sessions: a random token in an HttpOnly cookie, only its hash stored, read from the
// database on every request (a sign-out on one node ends it everywhere); argon2id behind a bounded gate.
import { randomBytes } from 'node:crypto'
import type { Caller } from '../kernel/caller'
import { SCOPES } from '../kernel/caller'
import { hashKey } from '../accounts'
import { accountTarget, auditRow, type Who } from '../audit'
import { allWritten } from '../db/written'
import { createPasswordGate, type Verifier } from '../links'
import type { DashboardStores, SessionWithAccount } from './storage/contract'

export const SESSION_TTL_MS = 7 * 24 * 3600_000
export const SESSION_MAX_MS = 30 * 24 * 3600_000
/** Sessions kept per account: signing in on a 21st browser signs out the oldest. */
export const MAX_SESSIONS_PER_ACCOUNT = 20
const TOUCH_EVERY_MS = 60_000

export const randomToken = (bytes = 32) => randomBytes(bytes).toString('base64url')

export interface Session {
  id: number
  accountId: number
  accountName: string
  admin: boolean
  csrf: string
  /** The cookie's token (the database has only its hash): what the session's flashes are sealed with (flash.ts). */
  token: string
  /** The caller the services see: the account, with every scope. */
  caller: Caller
}

/** A sign-in that makes a session: from where, and how (the audit row's detail: "password"). */
export interface SignIn {
  address: string
  method: string
}

/** The sign-in and the sessions, over the storages handed in (the engine's: see the header). */
export function createSessions<Tx>(deps: {
  storages: Pick<DashboardStores<Tx>, 'accounts' | 'sessions' | 'audit'>
  clock: () => number
  verify?: Verifier
}) {
  const { storages, clock } = deps
  const gate = createPasswordGate({ verify: deps.verify })
  // An unknown name costs the same hash check as a known one, so timing does not tell which names exist.
  let dummyHash: Promise<string> | null = null

  const toSession = (row: SessionWithAccount, token: string): Session => ({
    token,
    id: row.id,
    accountId: row.account_id,
    accountName: row.account_name,
    admin: row.admin === 1,
    csrf: row.csrf,
    caller: {
      accountId: row.account_id,
      accountName: row.account_name,
      admin: row.admin === 1,
      scopes: new Set(SCOPES),
      keyId: null,
      via: 'dashboard',
    },
  })

  return {
    /**
     * The account for a name and password, or why not (unknown name, no dashboard password, wrong password,
     * disabled account). The visitor gets one answer for all, so that they cannot tell them apart; the
     * reason is for the audit log (failed). Throws a 503 AppError when too many checks are under way.
     */
    async checkPassword(
      name: string,
      password: string,
    ): Promise<{ account: { id: number; name: string } } | { account: null; reason: string }> {
      const row = name.length <= 64 ? await storages.accounts.accountByName(name) : null
      const hash = row?.password_hash ?? (await (dummyHash ??= Bun.password.hash(randomToken(), 'argon2id')))
      const right = password.length > 0 && password.length <= 128 && (await gate.verify(password, hash))
      if (!row) return { account: null, reason: 'no such account' }
      if (row.password_hash === null) return { account: null, reason: 'the account has no dashboard password' }
      if (!right) return { account: null, reason: 'wrong password' }
      if (row.disabled !== null) return { account: null, reason: 'the account is disabled' }
      return { account: { id: row.id, name: row.name } }
    },

    /** A failed sign-in's audit row: nobody, the name tried (at most 64 characters) and why; never the password. */
    async failed(name: string, reason: string, address: string): Promise<void> {
      const who: Who = { actor: { kind: 'anonymous', name: name.slice(0, 64) }, address }
      await storages.audit.insertAlone(
        auditRow(who, { action: 'signin.failed', target: `account ${name.slice(0, 64)}`, detail: reason }, clock()),
      )
    },

    /**
     * A new session for the account; returns the token for the cookie (shown nowhere else). A sign-in
     * (`signIn`) also sets the account's last sign-in time and writes its audit row, in the same transaction.
     */
    async create(accountId: number, signIn?: SignIn): Promise<{ token: string; session: Session }> {
      const token = randomToken()
      const now = clock()
      const row = await storages.sessions.create(
        { tokenHash: hashKey(token), accountId, csrf: randomToken(24), now, expires: now + SESSION_TTL_MS },
        MAX_SESSIONS_PER_ACCOUNT,
        (tx, made) =>
          signIn &&
          allWritten([
            storages.accounts.setLastSignin(accountId, now, tx),
            storages.audit.insert(
              tx,
              auditRow(
                { actor: { kind: 'account', id: accountId, name: made.account_name }, address: signIn.address },
                { action: 'signin.ok', target: accountTarget(made.account_name, accountId), detail: signIn.method },
                clock(),
              ),
            ),
          ]),
      )
      return { token, session: toSession(row, token) }
    },

    /** The live session for a cookie's token, or null (unknown, expired, signed out, account disabled). */
    async lookup(token: string): Promise<Session | null> {
      if (token.length < 20 || token.length > 100) return null
      const row = await storages.sessions.byHash(hashKey(token))
      if (!row) return null
      const now = clock()
      if (row.expires <= now || row.disabled !== null) {
        await storages.sessions.remove(row.id)
        return null
      }
      if (now - row.last_seen >= TOUCH_EVERY_MS) {
        try {
          await storages.sessions.touch(row.id, now, Math.min(now + SESSION_TTL_MS, row.created + SESSION_MAX_MS))
        } catch {} // best effort: a full disk must not sign everyone out
      }
      return toSession(row, token)
    },

    async end(sessionId: number): Promise<void> {
      await storages.sessions.remove(sessionId)
    },

    /** Signs an account out everywhere (it was disabled, or its password changed). */
    endAll(accountId: number): Promise<number> {
      return storages.sessions.removeOfAccount(accountId)
    },

    sweep(now = clock()): Promise<number> {
      return storages.sessions.sweep(now)
    },
  }
}
export type Sessions = ReturnType<typeof createSessions<unknown>>
