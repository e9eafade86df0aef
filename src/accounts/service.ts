// Accounts and API keys. A key is shown once; only its SHA-256 is stored, with a visible prefix so that
// people can tell their keys apart in `key list`.
//
// On the async storages (issue 22): the service talks to the database only through AccountStorage and
// AuditRows (db/storages.ts), so it runs on either engine. Async: every read and every change; each change
// is ONE storage decision (the re-check is inside it) with its audit row written by `within` in the same
// transaction. disableWithin is the one change made inside another feature's transaction (a report closed by
// disabling its owner): not async, so that on SQLite it runs or throws inside that transaction.
// Synchronous: the key cache's hit. authenticate() is async for a miss (one read), but a hit reads only
// memory and AccountStorage.keysChanged(), itself synchronous (SQLite: PRAGMA data_version), so an API
// request with a known key never waits on the database; last_used is written without being waited for.
// PostgreSQL, still to do: its keysChanged() says "always" (nothing is cached, one read a request) until the
// change feed (db/changes.ts, branch pgnotify) is wired: each change here that affects a key (revokes, an
// edit, a disable, a deletion; disableWithin after its caller's commit) publishes ('account', [account id])
// once committed, the service subscribes with forgetKeys() for both the keys and a resync, and the
// PostgreSQL keysChanged() then answers false.
import { accountTarget, auditRow, keyTarget, SYSTEM, type AuditEntry, type Who } from '../audit/service'
import type { Storages } from '../app/storages'
import { SCOPES, type Caller, type Scope } from '../kernel/caller'
import { AppError } from '../kernel/errors'
import type { AccountSummaryRow, KeyRow, KeyWithAccount, NewKey, Refusal } from './storage'

export { SCOPES, type Caller, type Scope } from '../kernel/caller'

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

/** Accounts on one page of listAccounts. */
export const ACCOUNT_PAGE_MAX = 50

// Callers by key hash, so that a request with a key costs a hash and a map lookup, not a query. An entry
// lives KEY_CACHE_MS at most and the map holds KEY_CACHE_MAX (the oldest go first); only keys that
// worked are kept, so unknown keys cannot fill it. A change in this process (revoke, edit, disable, delete)
// empties it once committed, and a lookup that was reading while it committed keeps its answer for its own
// request only (the generation moved: it is not cached). A change committed elsewhere empties it at the next
// request: AccountStorage.keysChanged(), on SQLite PRAGMA data_version (`linkbox key revoke` from the CLI is
// another connection). So a revoked key stops working at once; KEY_CACHE_MS bounds only what is changed on
// this very connection behind the service's back.
const KEY_CACHE_MS = 5_000
const KEY_CACHE_MAX = 10_000

/** Why a disable or a deletion was refused (the storage decides it on the rows of its transaction), as the answer. */
function refusalError(what: 'disable' | 'delete', name: string, refusal: Refusal): AppError {
  if (refusal.reason === 'not_found') return new AppError(404, 'not_found', `No account named "${name}".`)
  if (refusal.reason === 'own_account')
    return new AppError(409, 'own_account', `You cannot ${what} your own account: ask another administrator, or use the command line.`)
  return new AppError(409, 'last_admin', `${refusal.account.name} is the last active administrator: make another account an administrator first, so that someone can still manage this service.`)
}

/** What the account service is handed: the account storage and the audit log's rows, of one engine. */
export type AccountStorages<Tx> = Pick<Storages<Tx>, 'accounts' | 'audit'>

/**
 * Every change here is written with its audit row (audit/service.ts) in one transaction: the storage's
 * decision runs `within` in it, which writes the row through AuditRows.insert(tx, …). `by` says who makes
 * it (the dashboard's session, the API's caller, the CLI). Without one the row names the service itself
 * (SYSTEM): what tests do to set up accounts.
 */
export function createAccountService<Tx>(storages: AccountStorages<Tx>, clock: () => number = Date.now) {
  const store = storages.accounts
  /** The audit row of a change, inside its transaction (on SQLite written, or thrown, before this returns). */
  const record = (tx: Tx, by: Who, entry: AuditEntry) => storages.audit.insert(tx, auditRow(by, entry, clock()))
  const lastTouched = new Map<number, number>()
  const keyCache = new Map<string, { caller: Caller; at: number }>()
  // Moves with every change of keys or accounts made here: a lookup begun before it does not cache its answer.
  let generation = 0

  /** Drops every cached caller: after a change to keys or accounts has committed. */
  function forgetKeys() {
    generation++
    keyCache.clear()
  }

  /** The cache hit costs no await on the database (see the top of this file). */
  async function callerByHash(hash: string, now: number): Promise<Caller | null> {
    if (store.keysChanged()) forgetKeys()
    const hit = keyCache.get(hash)
    if (hit && now - hit.at < KEY_CACHE_MS) return hit.caller
    keyCache.delete(hash)
    const seen = generation
    const row = await store.activeKeyByHash(hash)
    if (!row) return null
    const caller = toCaller(row, 'key')
    if (seen !== generation || store.keysChanged()) {
      forgetKeys()
      return caller
    }
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value!)
    keyCache.set(hash, { caller, at: now })
    return caller
  }

  /** A new key as the storage keeps it (its prefix and hash), and the key itself, shown once. */
  function newKey(scopes: Scope[], label: string): { key: string; stored: NewKey } {
    const key = `lbk_${randomBase62(40)}`
    return { key, stored: { prefix: key.slice(0, KEY_PREFIX_LENGTH), hash: hashKey(key), scopes: scopes.join(','), label } }
  }

  /** The audit row of a key made (an account's first key is part of the account's row instead). */
  const keyCreated = (tx: Tx, by: Who, row: KeyRow, ownerName: string, scopes: Scope[], label: string) =>
    record(tx, by, { action: 'key.create', target: keyTarget(row.prefix, row.id, ownerName), detail: `scopes ${scopes.join(',')}${label ? `; label "${label}"` : ''}` })

  async function hashPassword(password: string) {
    if (password.length < 8 || password.length > 128) throw new AppError(400, 'invalid_parameter', 'The dashboard password must be 8 to 128 characters.')
    return Bun.password.hash(password, 'argon2id')
  }

  /** The account id of who asks, when it is an account (nobody disables or deletes their own). */
  const actorIdOf = (by: Who) => (by.actor.kind === 'account' ? by.actor.id : null)

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
      // Names compare in any case: Carol is refused when carol exists, and the message names carol.
      const taken = (existing: string) =>
        new AppError(409, 'account_exists', existing === input.name
          ? `The account "${existing}" exists already.`
          : `The account "${existing}" exists already: account names are the same in any case, so "${input.name}" is taken.`)
      // Before the hash, so that a taken name costs no hash; the storage checks again in its write.
      const existing = await store.accountByNameAnyCase(input.name)
      if (existing) throw taken(existing.name)
      const hash = input.password !== undefined ? await hashPassword(input.password) : null
      const scopes = input.scopes ?? [...SCOPES]
      const made = newKey(scopes, 'created with the account')
      const done = await store.createAccount({ name: input.name, passwordHash: hash, admin: !!input.admin, now: clock(), key: made.stored }, (tx, account, key) =>
        record(tx, typeof by === 'function' ? by(account) : by, {
          action: 'account.create',
          target: accountTarget(account.name, account.id),
          detail: `${input.admin ? 'administrator' : 'user'}, ${hash ? 'with a dashboard password' : 'API only'}; first key ${key!.prefix}… (#${key!.id})`,
        }),
      )
      if (!done.ok) throw taken((await store.accountByNameAnyCase(input.name))?.name ?? input.name)
      return { account: done.account, key: { key: made.key, id: done.key!.id, prefix: done.key!.prefix, scopes } }
    },

    /**
     * Disables (or enables again) an account: a disabled account's keys are refused at once (the key cache
     * is emptied here), its dashboard sessions end in the same transaction, and it cannot sign in. Nobody
     * disables their own account, and the last active administrator is not disabled.
     */
    async setDisabled(name: string, disabled: boolean, by: Who = SYSTEM) {
      const done = await store.setDisabled(name, disabled ? clock() : null, actorIdOf(by), (tx, account, ended) =>
        record(tx, by, {
          action: disabled ? 'account.disable' : 'account.enable',
          target: accountTarget(account.name, account.id),
          detail: disabled ? `${ended} session${ended === 1 ? '' : 's'} ended` : '',
        }),
      )
      if (!done.ok) throw refusalError('disable', name, done)
      forgetKeys()
      return { id: done.account.id, name: done.account.name, disabled }
    },

    /**
     * Inside another change's transaction `tx` (a report closed by disabling its owner): setDisabled's
     * disable with its sessions ended and its audit row, or its refusal thrown there, so that the other
     * change rolls back with it. Not async: on SQLite it runs, or throws, before it returns.
     */
    disableWithin(tx: Tx, name: string, by: Who = SYSTEM): Promise<unknown> {
      forgetKeys()
      return store.disableIn(tx, name, clock(), actorIdOf(by), (tx, done) => {
        if (!done.ok) throw refusalError('disable', name, done)
        // A lookup that reads before the caller's commit does not keep its answer (on SQLite none can run in between).
        forgetKeys()
        const ended = done.sessionsEnded
        return record(tx, by, { action: 'account.disable', target: accountTarget(done.account.name, done.account.id), detail: `${ended} session${ended === 1 ? '' : 's'} ended` })
      })
    },

    /**
     * Deletes an account: its keys, sessions, mailboxes and webhooks go with it; its links either stay,
     * owned by nobody, or (withLinks) go too — the codes of those that went are returned, for the link
     * cache of this process (links.forget). Refused for oneself and for the last active administrator.
     */
    async deleteAccount(name: string, opts: { withLinks: boolean }, by: Who = SYSTEM) {
      const done = await store.deleteAccount(name, opts.withLinks, actorIdOf(by), (tx, account, links) =>
        record(tx, by, {
          action: 'account.delete',
          target: accountTarget(account.name, account.id),
          detail: opts.withLinks ? `its ${links} link${links === 1 ? '' : 's'} deleted with it` : `its ${links} link${links === 1 ? '' : 's'} kept, owned by nobody`,
        }),
      )
      if (!done.ok) throw refusalError('delete', name, done)
      forgetKeys()
      return { id: done.account.id, name: done.account.name, links: done.links, deletedLinks: done.deletedLinks }
    },

    /** Sets an account's dashboard password (an admin resets it): its sessions end in the same transaction. */
    async setPassword(name: string, password: string, by: Who = SYSTEM) {
      const noSuch = () => new AppError(404, 'not_found', `No account named "${name}".`)
      if (!(await store.accountByName(name))) throw noSuch()
      const hash = await hashPassword(password)
      const done = await store.setPassword(name, hash, (tx, account, ended) =>
        record(tx, by, { action: 'account.password', target: accountTarget(account.name, account.id), detail: `${ended} session${ended === 1 ? '' : 's'} ended` }),
      )
      if (!done) throw noSuch()
      return { id: done.account.id, name: done.account.name, sessionsEnded: done.sessionsEnded }
    },

    /** The account of this name as stored (null: none): `linkbox import` checks it. */
    accountByName: (name: string) => store.accountByName(name),

    /** Accounts stored (open sign-up stops at a bound). */
    count: () => store.count(),

    /**
     * One page of all accounts, oldest first, with their links, active keys and mailboxes counted (for
     * administrators: the caller checks that). `page` starts at 1; at most ACCOUNT_PAGE_MAX rows a page.
     */
    async listAccounts(input: { page?: number; perPage?: number } = {}) {
      const perPage = Math.min(Math.max(1, Math.floor(input.perPage ?? ACCOUNT_PAGE_MAX)), ACCOUNT_PAGE_MAX)
      const total = await store.count()
      const pages = Math.max(1, Math.ceil(total / perPage))
      const page = Math.min(Math.max(1, Math.floor(input.page ?? 1) || 1), pages)
      const accounts = (await store.accountPage(perPage, (page - 1) * perPage)).map(summary)
      return { accounts, page, pages, total, perPage }
    },

    /** One account as listAccounts shows it, by id (null: none). */
    async account(id: number) {
      const row = Number.isSafeInteger(id) ? await store.accountSummary(id) : null
      return row ? summary(row) : null
    },

    /** Active administrators (a disabled one does not count): the last one is neither disabled nor deleted. */
    activeAdmins: () => store.activeAdmins(),

    async createKey(input: { account: string; scopes?: Scope[]; label?: string }, by: Who = SYSTEM) {
      const label = validateLabel(input.label ?? '')
      const scopes = input.scopes ?? [...SCOPES]
      const made = newKey(scopes, label)
      const done = await store.createKey(input.account, made.stored, clock(), (tx, account, key) => keyCreated(tx, by, key, account.name, scopes, label))
      if (!done) throw new AppError(404, 'not_found', `No account named "${input.account}".`)
      return { key: made.key, id: done.key.id, prefix: done.key.prefix, scopes }
    },

    /**
     * A key for the account with this id (the dashboard's signed-in account), within MAX_ACTIVE_KEYS; the
     * account's revoked keys beyond the REVOKED_KEYS_KEPT latest are deleted in the same transaction.
     * `within` runs in that transaction after the insert (the dashboard claims its form token there; on
     * SQLite it must be synchronous); when it throws, no key is made.
     */
    async createKeyForAccount(input: { accountId: number; scopes: Scope[]; label?: string }, opts: { within?: (tx: Tx, key: { id: number }) => unknown } = {}, by: Who = SYSTEM) {
      const label = validateLabel(input.label ?? '')
      if (input.scopes.length === 0) throw new AppError(400, 'invalid_parameter', 'Choose at least one scope.')
      for (const s of input.scopes)
        if (!(SCOPES as readonly string[]).includes(s))
          throw new AppError(400, 'invalid_parameter', `Unknown scope "${s}": scopes are ${SCOPES.join(', ')}.`)
      const scopes = [...new Set(input.scopes)]
      const made = newKey(scopes, label)
      const done = await store.createKeyUnder(input.accountId, made.stored, clock(), { max: MAX_ACTIVE_KEYS, keepRevoked: REVOKED_KEYS_KEPT }, (tx, account, key) =>
        Promise.all([keyCreated(tx, by, key, account.name, scopes, label), opts.within?.(tx, { id: key.id })]),
      )
      if (!done.ok && done.reason === 'full')
        throw new AppError(409, 'too_many_keys', `An account can hold ${MAX_ACTIVE_KEYS} active keys: revoke one you no longer use first.`)
      if (!done.ok) throw new AppError(404, 'not_found', 'This account does not exist any more.')
      return { key: made.key, id: done.key.id, prefix: done.key.prefix, scopes }
    },

    /** An account's keys, newest first, at most `limit` (never the hash). */
    async keysOfAccount(accountId: number, limit = MAX_ACTIVE_KEYS + REVOKED_KEYS_KEPT) {
      return (await store.keysOfAccountNewest(accountId, limit)).map((r) => ({
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
    async editKeyOfAccount(accountId: number, id: number, input: { scopes: readonly string[]; label?: string }, by: Who = SYSTEM) {
      const label = validateLabel(input.label ?? '')
      if (input.scopes.length === 0) throw new AppError(400, 'invalid_parameter', 'Choose at least one scope.')
      for (const s of input.scopes)
        if (!(SCOPES as readonly string[]).includes(s))
          throw new AppError(400, 'invalid_parameter', `Unknown scope "${String(s).slice(0, 40)}": scopes are ${SCOPES.join(', ')}.`)
      const scopes = SCOPES.filter((s) => input.scopes.includes(s))
      // The change and its audit row in one transaction.
      const done = Number.isSafeInteger(id)
        ? await store.editKeyOfAccount(id, accountId, label, scopes.join(','), (tx, before, after) =>
            record(tx, by, {
              action: 'key.update',
              target: keyTarget(after.prefix, after.id, before.account_name),
              detail: [
                before.scopes !== after.scopes ? `scopes ${before.scopes} → ${after.scopes}` : '',
                before.label !== after.label ? `label ${JSON.stringify(before.label)} → ${JSON.stringify(after.label)}` : '',
              ].filter(Boolean).join('; ') || 'nothing changed',
            }),
          )
        : null
      if (!done) throw new AppError(404, 'not_found', 'This account has no such active key.')
      forgetKeys()
      return { id: done.after.id, prefix: done.after.prefix, scopes, label: done.after.label }
    },

    /** Revokes one of this account's keys by id: 404 when the account has no such key, or it is revoked already. */
    async revokeKeyOfAccount(accountId: number, id: number, by: Who = SYSTEM) {
      const row = Number.isSafeInteger(id) ? await store.keyById(id) : null
      if (!row || row.account_id !== accountId) throw new AppError(404, 'not_found', 'This account has no such key.')
      const done = await store.revokeKeyOfAccount(id, accountId, clock(), (tx, key) =>
        record(tx, by, { action: 'key.revoke', target: keyTarget(key.prefix, key.id, key.account_name) }),
      )
      if (!done) throw new AppError(404, 'not_found', `The key ${row.prefix}… is revoked already.`)
      forgetKeys()
      return { id, prefix: done.prefix, revoked: true }
    },

    async listKeys(input: { account?: string } = {}) {
      let rows: KeyWithAccount[]
      if (input.account) {
        const account = await store.accountByName(input.account)
        if (!account) throw new AppError(404, 'not_found', `No account named "${input.account}".`)
        rows = await store.keysOfAccount(account.id)
      } else rows = await store.allKeys()
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
    async revokeKey(ref: string, by: Who = SYSTEM) {
      let id: number | undefined
      if (/^\d+$/.test(ref)) id = Number(ref)
      else {
        const rows = await store.keysByPrefix(ref.slice(0, KEY_PREFIX_LENGTH))
        if (rows.length > 1) throw new AppError(409, 'ambiguous', `Several keys start with "${ref}": revoke by id.`)
        id = rows[0]?.id
      }
      const done =
        id !== undefined && Number.isSafeInteger(id)
          ? await store.revokeKey(id, clock(), (tx, key) => record(tx, by, { action: 'key.revoke', target: keyTarget(key.prefix, key.id, key.account_name) }))
          : null
      if (!done) throw new AppError(404, 'not_found', `No active key "${ref}".`)
      forgetKeys()
      return { id: done.id, revoked: true }
    },

    /** The caller for a raw key, or null when the key is unknown or revoked. */
    async authenticate(rawKey: string): Promise<Caller | null> {
      if (rawKey.length > 200) return null
      const now = clock()
      const caller = await callerByHash(hashKey(rawKey), now)
      if (!caller) return null
      const id = caller.keyId!
      // last_used is informative: write it at most once a minute per key, not on every request, and never
      // wait for it. Best effort: a database that cannot be written (full disk) must not lock every key out.
      if (now - (lastTouched.get(id) ?? 0) > 60_000) {
        lastTouched.set(id, now)
        store.touchKey(id, now).catch(() => {})
      }
      return caller
    },

    /** The account behind a marketplace user, created on first use; it has the marketplace scopes. */
    async marketplaceCaller(user: string, address = ''): Promise<Caller> {
      const name = `marketplace:${user}`
      let account = await store.accountByName(name)
      if (!account) {
        const made = await store.createAccount({ name, passwordHash: null, admin: false, now: clock(), key: null }, (tx, row) =>
          record(tx, { actor: { kind: 'system', name: 'marketplace' }, address }, { action: 'account.create', target: accountTarget(name, row.id), detail: 'a marketplace user, on first use' }),
        )
        // Made at the same moment by another request: that one is the account.
        account = made.ok ? made.account : await store.accountByName(name)
        if (!account) throw new AppError(503, 'unavailable', 'The marketplace account could not be made: try again.')
      }
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
