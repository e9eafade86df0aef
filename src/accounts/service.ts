// Accounts and API keys. A key is shown once; only its SHA-256 is stored, with a visible prefix so that
// people can tell their keys apart in `key list`.
import { createHash, randomBytes } from 'node:crypto'
import { accountTarget, createAuditLog, keyTarget, SYSTEM, type Who } from '../audit/service'
import { AppError } from '../errors'
import type { Db } from '../db'
import { createAccountStore, type AccountSummaryRow, type KeyWithAccount } from './store'

export const SCOPES = ['links', 'qr', 'media', 'mail', 'webhooks'] as const
export type Scope = (typeof SCOPES)[number]

/** Who is calling: an account reached through a key or the marketplace route. */
export interface Caller {
  accountId: number
  accountName: string
  admin: boolean
  scopes: ReadonlySet<Scope>
  keyId: number | null
  /** dashboard: a signed-in browser session (all scopes of its account). */
  via: 'key' | 'marketplace' | 'dashboard'
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
export function randomBase62(length: number): string {
  // Rejection sampling keeps every character equally likely (256 is not a multiple of 62).
  let out = ''
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62]
    }
  }
  return out
}

export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex')

const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/
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

const KEY_PREFIX_LENGTH = 11 // "lbk_" + 7 characters

export function parseScopes(text: string | undefined): Scope[] {
  if (!text || text === 'all') return [...SCOPES]
  const scopes = text.split(',').map((s) => s.trim()).filter(Boolean)
  for (const s of scopes)
    if (!(SCOPES as readonly string[]).includes(s))
      throw new AppError(400, 'invalid_parameter', `Unknown scope "${s}": scopes are ${SCOPES.join(', ')}.`)
  if (scopes.length === 0) throw new AppError(400, 'invalid_parameter', 'At least one scope is needed.')
  return [...new Set(scopes)] as Scope[]
}

// Callers by key hash, so that a request with a key costs a hash and a map lookup, not a query. An entry
// lives KEY_CACHE_MS at most and the map holds KEY_CACHE_MAX (the oldest go first); only keys that
// worked are kept, so unknown keys cannot fill it. A revoke in this process empties it at once; a commit
// by another connection (`linkbox key revoke` from the CLI) empties it at the next request, seen through
// PRAGMA data_version. So a revoked key stops working at once; KEY_CACHE_MS bounds only what is changed
// on this very connection behind the service's back.
/** Accounts on one page of listAccounts. */
export const ACCOUNT_PAGE_MAX = 50

const KEY_CACHE_MS = 5_000
const KEY_CACHE_MAX = 10_000

/** Why a change to an account is refused for who asks it: oneself, or the last active administrator. */
function refusedChange(what: 'disable' | 'delete', account: { id: number; name: string; admin: number; disabled: number | null }, by: Who, activeAdmins: number) {
  if (by.actor.kind === 'account' && by.actor.id === account.id)
    return new AppError(409, 'own_account', `You cannot ${what} your own account: ask another administrator, or use the command line.`)
  if (account.admin === 1 && account.disabled === null && activeAdmins <= 1)
    return new AppError(409, 'last_admin', `${account.name} is the last active administrator: make another account an administrator first, so that someone can still manage this service.`)
  return null
}

/**
 * Every change here is written with its audit row (audit/service.ts) in one transaction; `by` says who
 * makes it (the dashboard's session, the API's caller, the CLI). Without one the row names the service
 * itself (SYSTEM): what tests do to set up accounts.
 */
export function createAccountService(db: Db, clock: () => number = Date.now) {
  const store = createAccountStore(db)
  const audit = createAuditLog(db, clock)
  const lastTouched = new Map<number, number>()
  const keyCache = new Map<string, { caller: Caller; at: number }>()
  let seenVersion = store.dataVersion()

  function callerByHash(hash: string, now: number): Caller | null {
    const version = store.dataVersion()
    if (version !== seenVersion) {
      seenVersion = version
      keyCache.clear()
    }
    const hit = keyCache.get(hash)
    if (hit && now - hit.at < KEY_CACHE_MS) return hit.caller
    keyCache.delete(hash)
    const row = store.keyByHash(hash)
    if (!row || row.revoked !== null || row.disabled !== null) return null
    const caller = toCaller(row, 'key')
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value!)
    keyCache.set(hash, { caller, at: now })
    return caller
  }

  /** A new key, inside the caller's transaction; its audit row when `by` is given (an account's first key is part of its row). */
  function newKey(account: { id: number; name: string }, scopes: Scope[], label: string, by: Who | null) {
    const key = `lbk_${randomBase62(40)}`
    const row = store.insertKey(account.id, key.slice(0, KEY_PREFIX_LENGTH), hashKey(key), scopes.join(','), label, clock())
    if (by) audit.record(by, { action: 'key.create', target: keyTarget(row.prefix, row.id, account.name), detail: `scopes ${scopes.join(',')}${label ? `; label "${label}"` : ''}` })
    return { key, id: row.id, prefix: row.prefix, scopes }
  }

  function accountNamed(name: string) {
    const account = store.accountByName(name)
    if (!account) throw new AppError(404, 'not_found', `No account named "${name}".`)
    return account
  }

  async function hashPassword(password: string) {
    if (password.length < 8 || password.length > 128) throw new AppError(400, 'invalid_parameter', 'The dashboard password must be 8 to 128 characters.')
    return Bun.password.hash(password, 'argon2id')
  }

  function toCaller(row: KeyWithAccount, via: Caller['via']): Caller {
    return {
      accountId: row.account_id,
      accountName: row.account_name,
      admin: row.admin === 1,
      scopes: new Set(row.scopes.split(',') as Scope[]),
      keyId: row.id,
      via,
    }
  }

  const summary = (r: AccountSummaryRow) => ({
    id: r.id,
    name: r.name,
    admin: r.admin === 1,
    created: r.created,
    disabled: r.disabled,
    lastSignin: r.last_signin,
    hasPassword: r.has_password === 1,
    sso: r.sso === 1,
    links: r.links,
    keys: r.keys,
    mailboxes: r.mailboxes,
  })

  return {
    /** `by` may name the new account itself (open sign-up: the account made itself), given its row. */
    async createAccount(input: { name: string; admin?: boolean; password?: string; scopes?: Scope[] }, by: Who | ((account: { id: number; name: string }) => Who) = SYSTEM) {
      if (!ACCOUNT_NAME.test(input.name))
        throw new AppError(400, 'invalid_parameter', 'Account names are 1-64 characters: letters, digits, . _ @ -, starting with a letter or digit.')
      if (store.accountByName(input.name)) throw new AppError(409, 'account_exists', `The account "${input.name}" exists already.`)
      const hash = input.password !== undefined ? await hashPassword(input.password) : null
      return db.transaction(() => {
        // Checked again in the write: another creation of the name may have committed during the hash.
        if (store.accountByName(input.name)) throw new AppError(409, 'account_exists', `The account "${input.name}" exists already.`)
        const account = store.insertAccount(input.name, hash, !!input.admin, clock())
        const key = newKey(account, input.scopes ?? [...SCOPES], 'created with the account', null)
        audit.record(typeof by === 'function' ? by(account) : by, {
          action: 'account.create',
          target: accountTarget(account.name, account.id),
          detail: `${input.admin ? 'administrator' : 'user'}, ${hash ? 'with a dashboard password' : 'API only'}; first key ${key.prefix}… (#${key.id})`,
        })
        return { account, key }
      })()
    },

    /**
     * Disables (or enables again) an account: a disabled account's keys are refused at once (the key cache
     * is emptied here), its dashboard sessions end in the same transaction, and it cannot sign in. Nobody
     * disables their own account, and the last active administrator is not disabled.
     */
    setDisabled(name: string, disabled: boolean, by: Who = SYSTEM) {
      const done = db.transaction(() => {
        const account = accountNamed(name)
        if (disabled) {
          const refused = refusedChange('disable', account, by, store.activeAdmins())
          if (refused) throw refused
        }
        store.setDisabled(account.id, disabled ? clock() : null)
        const ended = disabled ? store.endSessions(account.id) : 0
        audit.record(by, {
          action: disabled ? 'account.disable' : 'account.enable',
          target: accountTarget(account.name, account.id),
          detail: disabled ? `${ended} session${ended === 1 ? '' : 's'} ended` : '',
        })
        return { id: account.id, name: account.name, disabled }
      })()
      keyCache.clear()
      return done
    },

    /**
     * Deletes an account: its keys, sessions, mailboxes and webhooks go with it; its links either stay,
     * owned by nobody, or (withLinks) go too — the codes of those that went are returned, for the link
     * cache of this process (links.forget). Refused for oneself and for the last active administrator.
     */
    deleteAccount(name: string, opts: { withLinks: boolean }, by: Who = SYSTEM) {
      const done = db.transaction(() => {
        const account = accountNamed(name)
        const refused = refusedChange('delete', account, by, store.activeAdmins())
        if (refused) throw refused
        const links = store.linkCount(account.id)
        const deleted = opts.withLinks ? store.deleteLinksOf(account.id) : []
        store.deleteAccount(account.id)
        audit.record(by, {
          action: 'account.delete',
          target: accountTarget(account.name, account.id),
          detail: opts.withLinks ? `its ${links} link${links === 1 ? '' : 's'} deleted with it` : `its ${links} link${links === 1 ? '' : 's'} kept, owned by nobody`,
        })
        return { id: account.id, name: account.name, links, deletedLinks: deleted }
      })()
      keyCache.clear()
      return done
    },

    /** Sets an account's dashboard password (an admin resets it): its sessions end in the same transaction. */
    async setPassword(name: string, password: string, by: Who = SYSTEM) {
      accountNamed(name)
      const hash = await hashPassword(password)
      return db.transaction(() => {
        const account = accountNamed(name)
        store.setPassword(account.id, hash)
        const ended = store.endSessions(account.id)
        audit.record(by, { action: 'account.password', target: accountTarget(account.name, account.id), detail: `${ended} session${ended === 1 ? '' : 's'} ended` })
        return { id: account.id, name: account.name, sessionsEnded: ended }
      })()
    },

    /** Accounts stored (open sign-up stops at a bound). */
    count: () => store.count(),

    /**
     * One page of all accounts, oldest first, with their links, active keys and mailboxes counted (for
     * administrators: the caller checks that). `page` starts at 1; at most ACCOUNT_PAGE_MAX rows a page.
     */
    listAccounts(input: { page?: number; perPage?: number } = {}) {
      const perPage = Math.min(Math.max(1, Math.floor(input.perPage ?? ACCOUNT_PAGE_MAX)), ACCOUNT_PAGE_MAX)
      const total = store.count()
      const pages = Math.max(1, Math.ceil(total / perPage))
      const page = Math.min(Math.max(1, Math.floor(input.page ?? 1) || 1), pages)
      const accounts = store.accountPage(perPage, (page - 1) * perPage).map(summary)
      return { accounts, page, pages, total, perPage }
    },

    /** One account as listAccounts shows it, by id (null: none). */
    account(id: number) {
      const row = Number.isSafeInteger(id) ? store.accountSummary(id) : undefined
      return row ? summary(row) : null
    },

    /** Active administrators (a disabled one does not count): the last one is neither disabled nor deleted. */
    activeAdmins: () => store.activeAdmins(),

    createKey(input: { account: string; scopes?: Scope[]; label?: string }, by: Who = SYSTEM) {
      const label = validateLabel(input.label ?? '')
      return db.transaction(() => newKey(accountNamed(input.account), input.scopes ?? [...SCOPES], label, by))()
    },

    /**
     * A key for the account with this id (the dashboard's signed-in account), within MAX_ACTIVE_KEYS; the
     * account's revoked keys beyond the REVOKED_KEYS_KEPT latest are deleted in the same transaction.
     * `within` runs in that transaction after the insert (the dashboard claims its form token there);
     * when it throws, no key is made.
     */
    createKeyForAccount(input: { accountId: number; scopes: Scope[]; label?: string }, opts: { within?: (key: { id: number }) => void } = {}, by: Who = SYSTEM) {
      const label = validateLabel(input.label ?? '')
      if (input.scopes.length === 0) throw new AppError(400, 'invalid_parameter', 'Choose at least one scope.')
      for (const s of input.scopes)
        if (!(SCOPES as readonly string[]).includes(s))
          throw new AppError(400, 'invalid_parameter', `Unknown scope "${s}": scopes are ${SCOPES.join(', ')}.`)
      return db.transaction(() => {
        if (store.activeKeyCount(input.accountId) >= MAX_ACTIVE_KEYS)
          throw new AppError(409, 'too_many_keys', `An account can hold ${MAX_ACTIVE_KEYS} active keys: revoke one you no longer use first.`)
        store.pruneRevoked(input.accountId, REVOKED_KEYS_KEPT)
        const account = store.accountById(input.accountId)
        if (!account) throw new AppError(404, 'not_found', 'This account does not exist any more.')
        const key = newKey(account, [...new Set(input.scopes)], label, by)
        opts.within?.(key)
        return key
      })()
    },

    /** An account's keys, newest first, at most `limit` (never the hash). */
    keysOfAccount(accountId: number, limit = MAX_ACTIVE_KEYS + REVOKED_KEYS_KEPT) {
      return store.keysOfAccountNewest(accountId, limit).map((r) => ({
        id: r.id,
        prefix: r.prefix,
        scopes: r.scopes.split(',') as Scope[],
        label: r.label,
        created: r.created,
        last_used: r.last_used,
        revoked: r.revoked,
      }))
    },

    /**
     * Changes the label and scopes of one of this account's active keys (the same rules as at creation): 404
     * when the account has no such key or it is revoked. A scope taken away is refused from the next request.
     */
    editKeyOfAccount(accountId: number, id: number, input: { scopes: readonly string[]; label?: string }, by: Who = SYSTEM) {
      const label = validateLabel(input.label ?? '')
      if (input.scopes.length === 0) throw new AppError(400, 'invalid_parameter', 'Choose at least one scope.')
      for (const s of input.scopes)
        if (!(SCOPES as readonly string[]).includes(s))
          throw new AppError(400, 'invalid_parameter', `Unknown scope "${String(s).slice(0, 40)}": scopes are ${SCOPES.join(', ')}.`)
      const scopes = SCOPES.filter((s) => input.scopes.includes(s))
      // The change and its audit row in one transaction.
      const row = db.transaction(() => {
        const before = Number.isSafeInteger(id) ? store.keyById(id) : null
        const after = before ? store.editKeyOfAccount(id, accountId, label, scopes.join(',')) : null
        if (!before || !after) throw new AppError(404, 'not_found', 'This account has no such active key.')
        audit.record(by, {
          action: 'key.update',
          target: keyTarget(after.prefix, after.id, before.account_name),
          detail: [
            before.scopes !== after.scopes ? `scopes ${before.scopes} → ${after.scopes}` : '',
            before.label !== after.label ? `label ${JSON.stringify(before.label)} → ${JSON.stringify(after.label)}` : '',
          ].filter(Boolean).join('; ') || 'nothing changed',
        })
        return after
      })()
      keyCache.clear()
      return { id: row.id, prefix: row.prefix, scopes, label: row.label }
    },

    /** Revokes one of this account's keys by id: 404 when the account has no such key, or it is revoked already. */
    revokeKeyOfAccount(accountId: number, id: number, by: Who = SYSTEM) {
      const row = Number.isSafeInteger(id) ? store.keyById(id) : null
      if (!row || row.account_id !== accountId) throw new AppError(404, 'not_found', 'This account has no such key.')
      db.transaction(() => {
        if (!store.revokeKeyOfAccount(id, accountId, clock()))
          throw new AppError(404, 'not_found', `The key ${row.prefix}… is revoked already.`)
        audit.record(by, { action: 'key.revoke', target: keyTarget(row.prefix, row.id, row.account_name) })
      })()
      keyCache.clear()
      return { id, prefix: row.prefix, revoked: true }
    },

    listKeys(input: { account?: string } = {}) {
      let rows: KeyWithAccount[]
      if (input.account) {
        const account = store.accountByName(input.account)
        if (!account) throw new AppError(404, 'not_found', `No account named "${input.account}".`)
        rows = store.keysOfAccount(account.id)
      } else rows = store.allKeys()
      return rows.map((r) => ({
        id: r.id,
        prefix: r.prefix,
        account: r.account_name,
        scopes: r.scopes.split(','),
        label: r.label,
        created: r.created,
        last_used: r.last_used,
        revoked: r.revoked,
      }))
    },

    /** Revokes by numeric id or by the visible prefix (which must then be unambiguous). */
    revokeKey(ref: string, by: Who = SYSTEM) {
      let id: number | undefined
      if (/^\d+$/.test(ref)) id = Number(ref)
      else {
        const rows = store.keysByPrefix(ref.slice(0, KEY_PREFIX_LENGTH))
        if (rows.length > 1) throw new AppError(409, 'ambiguous', `Several keys start with "${ref}": revoke by id.`)
        id = rows[0]?.id
      }
      const row = id !== undefined && Number.isSafeInteger(id) ? store.keyById(id) : undefined
      db.transaction(() => {
        if (!row || !store.revokeKey(row.id, clock())) throw new AppError(404, 'not_found', `No active key "${ref}".`)
        audit.record(by, { action: 'key.revoke', target: keyTarget(row.prefix, row.id, row.account_name) })
      })()
      keyCache.clear()
      return { id: row!.id, revoked: true }
    },

    /** The caller for a raw key, or null when the key is unknown or revoked. */
    authenticate(rawKey: string): Caller | null {
      if (rawKey.length > 200) return null
      const now = clock()
      const caller = callerByHash(hashKey(rawKey), now)
      if (!caller) return null
      const id = caller.keyId!
      // last_used is informative: write it at most once a minute per key, not on every request.
      if (now - (lastTouched.get(id) ?? 0) > 60_000) {
        lastTouched.set(id, now)
        // Best effort: a database that cannot be written (full disk) must not lock every key out.
        try {
          store.touchKey(id, now)
        } catch {}
      }
      return caller
    },

    /** The account behind a marketplace user, created on first use; it has the marketplace scopes. */
    marketplaceCaller(user: string, address = ''): Caller {
      const name = `marketplace:${user}`
      const account =
        store.accountByName(name) ??
        db.transaction(() => {
          const made = store.insertAccount(name, null, false, clock())
          audit.record({ actor: { kind: 'system', name: 'marketplace' }, address }, { action: 'account.create', target: accountTarget(name, made.id), detail: 'a marketplace user, on first use' })
          return made
        })()
      if (account.disabled !== null) throw new AppError(403, 'account_disabled', 'This account has been disabled by an administrator.')
      return {
        accountId: account.id,
        accountName: name,
        admin: false,
        scopes: new Set<Scope>(['qr', 'media', 'mail']),
        keyId: null,
        via: 'marketplace',
      }
    },
  }
}
export type AccountService = ReturnType<typeof createAccountService>
