// Accounts and API keys on PostgreSQL, for any number of nodes: each decision is taken on rows its transaction
// has locked, or is one conditional statement (READ COMMITTED). The locks: ARCHITECTURE (accounts).
import type { SQL, TransactionSQL } from 'bun'
import type { ChangeFeed } from '../../db/changes'
import { CHANNEL, encodeChanges } from '../../db/postgres/changes'
import { int, intOrNull, text, textOrNull, type PgRow } from '../../db/postgres/rows'
import {
  ACCOUNT_TOPIC,
  nameFolds,
  type AccountRow,
  type AccountStorage,
  type AccountSummaryRow,
  type Disabled,
  type KeyRow,
  type KeyWithAccount,
  type NewKey,
  type Refusal,
} from './contract'
import { lockAccountName } from './name-lock'

export const account = (r: PgRow): AccountRow => ({
  id: int(r.id),
  name: text(r.name),
  password_hash: textOrNull(r.password_hash),
  admin: int(r.admin),
  created: int(r.created),
  disabled: intOrNull(r.disabled),
  last_signin: intOrNull(r.last_signin),
})

const key = (r: PgRow): KeyRow => ({
  id: int(r.id),
  account_id: int(r.account_id),
  prefix: text(r.prefix),
  hash: text(r.hash),
  scopes: text(r.scopes),
  label: text(r.label),
  created: int(r.created),
  last_used: intOrNull(r.last_used),
  revoked: intOrNull(r.revoked),
})

const keyWithAccount = (r: PgRow): KeyWithAccount => ({
  ...key(r),
  account_name: text(r.account_name),
  admin: int(r.admin),
  disabled: intOrNull(r.disabled),
})

const summary = (r: PgRow): AccountSummaryRow => ({
  id: int(r.id),
  name: text(r.name),
  admin: int(r.admin),
  created: int(r.created),
  disabled: intOrNull(r.disabled),
  last_signin: intOrNull(r.last_signin),
  has_password: r.has_password ? 1 : 0,
  sso: r.sso ? 1 : 0,
  links: int(r.links),
  keys: int(r.keys),
  mailboxes: int(r.mailboxes),
})

const ACCOUNT = 'id, name, password_hash, admin, created, disabled, last_signin'
const KEY = 'k.id, k.account_id, k.prefix, k.hash, k.scopes, k.label, k.created, k.last_used, k.revoked'
const KEY_WITH_ACCOUNT = `${KEY}, a.name AS account_name, a.admin, a.disabled`
const SUMMARY = `a.id, a.name, a.admin, a.created, a.disabled, a.last_signin, (a.password_hash IS NOT NULL) AS has_password,
  EXISTS (SELECT 1 FROM oidc_identities i WHERE i.account_id = a.id) AS sso,
  coalesce((SELECT c.links FROM link_counts c WHERE c.owner = a.id), 0) AS links,
  (SELECT count(*) FROM api_keys k WHERE k.account_id = a.id AND k.revoked IS NULL) AS keys,
  (SELECT count(*) FROM mailboxes m WHERE m.account_id = a.id) AS mailboxes`

// Sent from inside a change that may turn a cached key away: NOTIFY is delivered at the commit, never for a
// rollback, so every node (this one too) hears of exactly the committed revokes, edits, disables and deletions.
const KEYS_CHANGED = encodeChanges('db', ACCOUNT_TOPIC, ['keys'])[0]!

/** `changes`: this node's feed; with it keysChanged() is true only after a notification or a resync, else always. */
export function postgresAccountStorage(sql: SQL, opts: { changes?: ChangeFeed } = {}): AccountStorage<TransactionSQL> {
  // True until the feed says nothing is missed: set by every notification and every resync.
  let changed = true
  opts.changes?.subscribe(
    ACCOUNT_TOPIC,
    () => void (changed = true),
    () => void (changed = true),
  )
  const notify = (tx: SQL) => tx`SELECT pg_notify(${CHANNEL}, ${KEYS_CHANGED})`
  const insertKey = async (tx: SQL, accountId: number, k: NewKey, now: number) =>
    key(
      (
        await tx`INSERT INTO api_keys (account_id, prefix, hash, scopes, label, created)
                 VALUES (${accountId}, ${k.prefix}, ${k.hash}, ${k.scopes}, ${k.label}, ${now}) RETURNING *`
      )[0],
    )

  /**
   * The named account locked for a disable or a deletion with every active administrator's row, in one statement
   * and in id order (so two such changes never wait on each other); the refusal when there is one.
   */
  async function lockForRemoval(
    tx: SQL,
    name: string,
    actorId: number | null,
    lock: 'FOR UPDATE' | 'FOR NO KEY UPDATE',
  ): Promise<AccountRow | Refusal> {
    const rows: AccountRow[] = (
      await tx.unsafe(
        `SELECT ${ACCOUNT} FROM accounts WHERE (admin = 1 AND disabled IS NULL) OR name = $1 ORDER BY id ${lock}`,
        [name],
      )
    ).map(account)
    // The rows as they are now: one that waited for another node's commit was read again after it.
    const target = rows.find((r) => r.name === name)
    if (!target) return { ok: false, reason: 'not_found' }
    if (actorId === target.id) return { ok: false, reason: 'own_account', account: target }
    const admins = rows.filter((r) => r.admin === 1 && r.disabled === null).length
    if (target.admin === 1 && target.disabled === null && admins <= 1)
      return { ok: false, reason: 'last_admin', account: target }
    return target
  }

  /** A disable (at: unix ms) or an enable (null) in `tx`, on the rows it locked: setDisabled's decision. */
  async function disable(
    tx: SQL,
    name: string,
    at: number | null,
    actorId: number | null,
  ): Promise<Disabled | Refusal> {
    let target: AccountRow
    if (at !== null) {
      const locked = await lockForRemoval(tx, name, actorId, 'FOR NO KEY UPDATE')
      if ('ok' in locked) return locked
      target = locked
    } else {
      const [row] = await tx`SELECT ${tx.unsafe(ACCOUNT)} FROM accounts WHERE name = ${name} FOR NO KEY UPDATE`
      if (!row) return { ok: false, reason: 'not_found' }
      target = account(row)
    }
    await tx`UPDATE accounts SET disabled = ${at} WHERE id = ${target.id}`
    await notify(tx)
    const sessionsEnded = at !== null ? (await tx`DELETE FROM web_sessions WHERE account_id = ${target.id}`).count : 0
    return { ok: true, account: target, sessionsEnded }
  }

  const keyWhere = async (tx: SQL, id: number) =>
    (
      await tx`SELECT ${tx.unsafe(KEY_WITH_ACCOUNT)} FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ${id}`
    )[0]

  return {
    async accountByName(name) {
      const [r] = await sql`SELECT ${sql.unsafe(ACCOUNT)} FROM accounts WHERE name = ${name}`
      return r ? account(r) : null
    },
    async accountByNameAnyCase(name) {
      const [r] = nameFolds(name)
        ? await sql`SELECT ${sql.unsafe(ACCOUNT)} FROM accounts WHERE lower(name) = lower(${name}) ORDER BY name = ${name} DESC, id LIMIT 1`
        : await sql`SELECT ${sql.unsafe(ACCOUNT)} FROM accounts WHERE name = ${name}`
      return r ? account(r) : null
    },
    async accountById(id) {
      const [r] = await sql`SELECT ${sql.unsafe(ACCOUNT)} FROM accounts WHERE id = ${id}`
      return r ? account(r) : null
    },
    count: async () => int((await sql`SELECT count(*) AS n FROM accounts`)[0].n),
    activeAdmins: async () =>
      int((await sql`SELECT count(*) AS n FROM accounts WHERE admin = 1 AND disabled IS NULL`)[0].n),
    accountPage: async (limit, offset) =>
      (await sql`SELECT ${sql.unsafe(SUMMARY)} FROM accounts a ORDER BY a.id LIMIT ${limit} OFFSET ${offset}`).map(
        summary,
      ),
    async accountSummary(id) {
      const [r] = await sql`SELECT ${sql.unsafe(SUMMARY)} FROM accounts a WHERE a.id = ${id}`
      return r ? summary(r) : null
    },
    linkCount: async (accountId) =>
      int((await sql`SELECT count(*) AS n FROM links WHERE account_id = ${accountId}`)[0].n),
    async setLastSignin(accountId, at, tx) {
      await (tx ?? sql)`UPDATE accounts SET last_signin = ${at} WHERE id = ${accountId}`
    },

    async keyById(id) {
      const r = await keyWhere(sql, id)
      return r ? keyWithAccount(r) : null
    },
    async activeKeyByHash(hash) {
      const [r] =
        await sql`SELECT ${sql.unsafe(KEY_WITH_ACCOUNT)} FROM api_keys k JOIN accounts a ON a.id = k.account_id
                            WHERE k.hash = ${hash} AND k.revoked IS NULL AND a.disabled IS NULL`
      return r ? keyWithAccount(r) : null
    },
    keysOfAccount: async (accountId) =>
      (
        await sql`SELECT ${sql.unsafe(KEY_WITH_ACCOUNT)} FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.account_id = ${accountId} ORDER BY k.id`
      ).map(keyWithAccount),
    allKeys: async () =>
      (
        await sql`SELECT ${sql.unsafe(KEY_WITH_ACCOUNT)} FROM api_keys k JOIN accounts a ON a.id = k.account_id ORDER BY k.id`
      ).map(keyWithAccount),
    keysByPrefix: async (prefix) =>
      (await sql`SELECT ${sql.unsafe(KEY)} FROM api_keys k WHERE k.prefix = ${prefix}`).map(key),
    keysOfAccountNewest: async (accountId, limit) =>
      (
        await sql`SELECT ${sql.unsafe(KEY)} FROM api_keys k WHERE k.account_id = ${accountId} ORDER BY k.id DESC LIMIT ${limit}`
      ).map(key),
    activeKeyCount: async (accountId) =>
      int((await sql`SELECT count(*) AS n FROM api_keys WHERE account_id = ${accountId} AND revoked IS NULL`)[0].n),
    async touchKey(id, now) {
      await sql`UPDATE api_keys SET last_used = ${now} WHERE id = ${id}`
    },
    // Without a feed: always, so that the key cache keeps nothing and a key revoked anywhere is refused at once.
    keysChanged() {
      if (!changed) return false
      changed = !opts.changes
      return true
    },

    async createAccount(input, within) {
      return sql.begin(async (tx) => {
        if (await lockAccountName(tx, input.name)) return { ok: false as const, reason: 'name_taken' as const }
        const [row] = await tx`INSERT INTO accounts (name, password_hash, admin, created)
                               VALUES (${input.name}, ${input.passwordHash}, ${input.admin ? 1 : 0}, ${input.now})
                               ON CONFLICT (name) DO NOTHING RETURNING ${tx.unsafe(ACCOUNT)}`
        if (!row) return { ok: false as const, reason: 'name_taken' as const }
        const made = account(row)
        const first = input.key ? await insertKey(tx, made.id, input.key, input.now) : null
        if (within) await within(tx, made, first)
        return { ok: true as const, account: made, key: first }
      })
    },

    async setDisabled(name, at, actorId, within) {
      return sql.begin(async (tx) => {
        const outcome = await disable(tx, name, at, actorId)
        if (outcome.ok && within) await within(tx, outcome.account, outcome.sessionsEnded)
        return outcome
      })
    },

    disableIn: async (tx, name, at, actorId, then) => then(tx, await disable(tx, name, at, actorId)),

    async deleteAccount(name, withLinks, actorId, within) {
      return sql.begin(async (tx) => {
        const locked = await lockForRemoval(tx, name, actorId, 'FOR UPDATE')
        if ('ok' in locked) return locked
        // The account's row is locked FOR UPDATE: no link can be given to it until this commits.
        const links = int((await tx`SELECT count(*) AS n FROM links WHERE account_id = ${locked.id}`)[0].n)
        const deletedLinks = withLinks
          ? (await tx`DELETE FROM links WHERE account_id = ${locked.id} RETURNING code, domain`).map(
              (r: { code: string; domain: string }) => ({ code: r.code, domain: r.domain }),
            )
          : []
        await tx`DELETE FROM accounts WHERE id = ${locked.id}`
        await notify(tx)
        if (within) await within(tx, locked, links)
        return { ok: true as const, account: locked, links, deletedLinks }
      })
    },

    async setPassword(name, hash, within) {
      return sql.begin(async (tx) => {
        const [row] = await tx`SELECT ${tx.unsafe(ACCOUNT)} FROM accounts WHERE name = ${name} FOR NO KEY UPDATE`
        if (!row) return null
        const target = account(row)
        await tx`UPDATE accounts SET password_hash = ${hash} WHERE id = ${target.id}`
        const sessionsEnded = (await tx`DELETE FROM web_sessions WHERE account_id = ${target.id}`).count
        if (within) await within(tx, target, sessionsEnded)
        return { account: target, sessionsEnded }
      })
    },

    async createKey(name, k, now, within) {
      return sql.begin(async (tx) => {
        // FOR KEY SHARE: the account cannot be deleted under the new key; other changes to it do not wait.
        const [row] = await tx`SELECT ${tx.unsafe(ACCOUNT)} FROM accounts WHERE name = ${name} FOR KEY SHARE`
        if (!row) return null
        const owner = account(row)
        const made = await insertKey(tx, owner.id, k, now)
        if (within) await within(tx, owner, made)
        return { account: owner, key: made }
      })
    },

    async createKeyUnder(accountId, k, now, limits, within) {
      return sql.begin(async (tx) => {
        const [row] = await tx`SELECT ${tx.unsafe(ACCOUNT)} FROM accounts WHERE id = ${accountId} FOR NO KEY UPDATE`
        if (!row) return { ok: false as const, reason: 'not_found' as const }
        const active = int(
          (await tx`SELECT count(*) AS n FROM api_keys WHERE account_id = ${accountId} AND revoked IS NULL`)[0].n,
        )
        if (active >= limits.max) return { ok: false as const, reason: 'full' as const }
        await tx`DELETE FROM api_keys WHERE account_id = ${accountId} AND revoked IS NOT NULL AND id NOT IN
                   (SELECT id FROM api_keys WHERE account_id = ${accountId} AND revoked IS NOT NULL ORDER BY revoked DESC, id DESC LIMIT ${limits.keepRevoked})`
        const owner = account(row)
        const made = await insertKey(tx, accountId, k, now)
        if (within) await within(tx, owner, made)
        return { ok: true as const, account: owner, key: made }
      })
    },

    async editKeyOfAccount(id, accountId, label, scopes, within) {
      return sql.begin(async (tx) => {
        const [b] =
          await tx`SELECT ${tx.unsafe(KEY_WITH_ACCOUNT)} FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ${id} FOR UPDATE OF k`
        if (!b) return null
        const [a] = await tx`UPDATE api_keys SET label = ${label}, scopes = ${scopes}
                             WHERE id = ${id} AND account_id = ${accountId} AND revoked IS NULL RETURNING *`
        if (!a) return null
        await notify(tx)
        const before = keyWithAccount(b)
        const after = key(a)
        if (within) await within(tx, before, after)
        return { before, after }
      })
    },

    async revokeKeyOfAccount(id, accountId, now, within) {
      return sql.begin(async (tx) => {
        const r =
          await tx`UPDATE api_keys SET revoked = ${now} WHERE id = ${id} AND account_id = ${accountId} AND revoked IS NULL`
        if (r.count !== 1) return null
        await notify(tx)
        const revoked = keyWithAccount(await keyWhere(tx, id))
        if (within) await within(tx, revoked)
        return revoked
      })
    },

    async revokeKey(id, now, within) {
      return sql.begin(async (tx) => {
        const r = await tx`UPDATE api_keys SET revoked = ${now} WHERE id = ${id} AND revoked IS NULL`
        if (r.count !== 1) return null
        await notify(tx)
        const revoked = keyWithAccount(await keyWhere(tx, id))
        if (within) await within(tx, revoked)
        return revoked
      })
    },
  }
}
