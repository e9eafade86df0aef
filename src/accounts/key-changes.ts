// API keys: made (by the CLI, or by the dashboard under a bound), edited, listed and revoked, each with its audit row.
import { keyTarget, SYSTEM, type Who } from '../audit'
import { allWritten } from '../db/written'
import { SCOPES, type Scope } from '../kernel/caller'
import { AppError } from '../kernel/errors'
import type { AccountContext } from './context'
import { KEY_PREFIX_LENGTH, MAX_ACTIVE_KEYS, newKey, REVOKED_KEYS_KEPT, validateLabel } from './keys'
import type { KeyRow, KeyWithAccount } from './storage/contract'

export function keyChanges<Tx>({ store, clock, record, forgetKeys }: AccountContext<Tx>) {
  /** The audit row of a key made (an account's first key is part of the account's row instead). */
  const keyCreated = (tx: Tx, by: Who, row: KeyRow, ownerName: string, scopes: Scope[], label: string) =>
    record(tx, by, {
      action: 'key.create',
      target: keyTarget(row.prefix, row.id, ownerName),
      detail: `scopes ${scopes.join(',')}${label ? `; label "${label}"` : ''}`,
    })

  return {
    async createKey(input: { account: string; scopes?: Scope[]; label?: string }, by: Who = SYSTEM) {
      const label = validateLabel(input.label ?? '')
      const scopes = input.scopes ?? [...SCOPES]
      const made = newKey(scopes, label)
      const done = await store.createKey(input.account, made.stored, clock(), (tx, account, key) =>
        keyCreated(tx, by, key, account.name, scopes, label),
      )
      if (!done) throw new AppError(404, 'not_found', `No account named "${input.account}".`)
      return { key: made.key, id: done.key.id, prefix: done.key.prefix, scopes }
    },

    /**
     * A key for the dashboard's account, within MAX_ACTIVE_KEYS (revoked ones beyond REVOKED_KEYS_KEPT go); `within`
     * runs in that transaction (the form token's claim; synchronous on SQLite): when it throws, no key is made.
     */
    async createKeyForAccount(
      input: { accountId: number; scopes: Scope[]; label?: string },
      opts: { within?: (tx: Tx, key: { id: number }) => unknown } = {},
      by: Who = SYSTEM,
    ) {
      const label = validateLabel(input.label ?? '')
      if (input.scopes.length === 0) throw new AppError(400, 'invalid_parameter', 'Choose at least one scope.')
      for (const s of input.scopes)
        if (!(SCOPES as readonly string[]).includes(s))
          throw new AppError(400, 'invalid_parameter', `Unknown scope "${s}": scopes are ${SCOPES.join(', ')}.`)
      const scopes = [...new Set(input.scopes)]
      const made = newKey(scopes, label)
      const done = await store.createKeyUnder(
        input.accountId,
        made.stored,
        clock(),
        { max: MAX_ACTIVE_KEYS, keepRevoked: REVOKED_KEYS_KEPT },
        (tx, account, key) =>
          allWritten([keyCreated(tx, by, key, account.name, scopes, label), opts.within?.(tx, { id: key.id })]),
      )
      if (!done.ok && done.reason === 'full')
        throw new AppError(
          409,
          'too_many_keys',
          `An account can hold ${MAX_ACTIVE_KEYS} active keys: revoke one you no longer use first.`,
        )
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
    async editKeyOfAccount(
      accountId: number,
      id: number,
      input: { scopes: readonly string[]; label?: string },
      by: Who = SYSTEM,
    ) {
      const label = validateLabel(input.label ?? '')
      if (input.scopes.length === 0) throw new AppError(400, 'invalid_parameter', 'Choose at least one scope.')
      for (const s of input.scopes)
        if (!(SCOPES as readonly string[]).includes(s))
          throw new AppError(
            400,
            'invalid_parameter',
            `Unknown scope "${String(s).slice(0, 40)}": scopes are ${SCOPES.join(', ')}.`,
          )
      const scopes = SCOPES.filter((s) => input.scopes.includes(s))
      // The change and its audit row in one transaction.
      const done = Number.isSafeInteger(id)
        ? await store.editKeyOfAccount(id, accountId, label, scopes.join(','), (tx, before, after) =>
            record(tx, by, {
              action: 'key.update',
              target: keyTarget(after.prefix, after.id, before.account_name),
              detail:
                [
                  before.scopes !== after.scopes ? `scopes ${before.scopes} → ${after.scopes}` : '',
                  before.label !== after.label
                    ? `label ${JSON.stringify(before.label)} → ${JSON.stringify(after.label)}`
                    : '',
                ]
                  .filter(Boolean)
                  .join('; ') || 'nothing changed',
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
          ? await store.revokeKey(id, clock(), (tx, key) =>
              record(tx, by, { action: 'key.revoke', target: keyTarget(key.prefix, key.id, key.account_name) }),
            )
          : null
      if (!done) throw new AppError(404, 'not_found', `No active key "${ref}".`)
      forgetKeys()
      return { id: done.id, revoked: true }
    },
  }
}
