// Accounts and API keys on either engine: each read-decide-write is ONE method, its decision a typed outcome, with
// `within(tx, …)` run in its transaction after the write (synchronous on SQLite). Notes: ARCHITECTURE (accounts).
import type { Written } from '../../db/written'

export interface AccountRow {
  id: number
  name: string
  password_hash: string | null
  admin: number
  created: number
  /** Unix ms when an admin disabled the account; null: active. */
  disabled: number | null
  /** Unix ms of the last password sign-in; null: never. */
  last_signin: number | null
}
export interface KeyRow {
  id: number
  account_id: number
  prefix: string
  hash: string
  scopes: string
  label: string
  created: number
  last_used: number | null
  revoked: number | null
}
export interface KeyWithAccount extends KeyRow {
  account_name: string
  admin: number
  disabled: number | null
}

/** An account as the admin's list shows it, with what it owns counted. */
export interface AccountSummaryRow {
  id: number
  name: string
  admin: number
  created: number
  disabled: number | null
  last_signin: number | null
  /** Has a dashboard password (can sign in). */
  has_password: number
  /** Made by (linked to) an OpenID provider: signs in there (oidc_identities). */
  sso: number
  links: number
  /** Keys not revoked. */
  keys: number
  mailboxes: number
}

/**
 * Account names compare without regard to case (issue 36): names are ASCII, so SQLite's lower() and
 * PostgreSQL's agree. The marketplace's made-up names (marketplace:<user>) stay exact.
 */
export const nameFolds = (name: string) => !name.includes(':')

/** The change feed's topic (db/changes.ts) of changes that may turn a cached key away. */
export const ACCOUNT_TOPIC = 'account'

/** A key as stored: the visible prefix and the SHA-256 of the key (never the key). */
export interface NewKey {
  prefix: string
  hash: string
  /** Comma-separated scopes. */
  scopes: string
  label: string
}

export interface NewAccount {
  name: string
  passwordHash: string | null
  admin: boolean
  now: number
  /** The account's first key, made in the same transaction (none: an account made by the marketplace or a provider). */
  key: NewKey | null
}

/** Why a disable or a deletion was refused: no such account, the caller's own, or the last active administrator. */
export type Refusal =
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'own_account' | 'last_admin'; account: AccountRow }

/** A disable done: the account as it was before, and its dashboard sessions ended. */
export type Disabled = { ok: true; account: AccountRow; sessionsEnded: number }

/** The reads of accounts and keys. */
export interface AccountReads {
  accountByName(name: string): Promise<AccountRow | null>
  /** The account of this name in any case (nameFolds), the exact spelling first. */
  accountByNameAnyCase(name: string): Promise<AccountRow | null>
  accountById(id: number): Promise<AccountRow | null>
  /** Accounts stored. */
  count(): Promise<number>
  /** Administrators not disabled. */
  activeAdmins(): Promise<number>
  /** One page of accounts, by id, with what each owns counted. */
  accountPage(limit: number, offset: number): Promise<AccountSummaryRow[]>
  accountSummary(id: number): Promise<AccountSummaryRow | null>
  /** Links the account owns. */
  linkCount(accountId: number): Promise<number>

  /** The key with its account, any state (null: none). */
  keyById(id: number): Promise<KeyWithAccount | null>
  /** The key of this hash with its account, when the key is not revoked and its account not disabled. */
  activeKeyByHash(hash: string): Promise<KeyWithAccount | null>
  keysOfAccount(accountId: number): Promise<KeyWithAccount[]>
  allKeys(): Promise<KeyWithAccount[]>
  keysByPrefix(prefix: string): Promise<KeyRow[]>
  /** The account's keys, newest first, at most `limit`. */
  keysOfAccountNewest(accountId: number, limit: number): Promise<KeyRow[]>
  activeKeyCount(accountId: number): Promise<number>
  touchKey(id: number, now: number): Promise<void>
  /** Synchronous (the key cache asks on every request): whether keys may have changed elsewhere since the last call. */
  keysChanged(): boolean
}

export interface AccountStorage<Tx> extends AccountReads {
  /** In `tx` when given (a sign-in's session): written there; on SQLite before it returns. */
  setLastSignin(accountId: number, at: number, tx?: Tx): Written<void>

  /** A new account (and its first key) unless the name is taken. */
  createAccount(
    input: NewAccount,
    within?: (tx: Tx, account: AccountRow, key: KeyRow | null) => unknown,
  ): Promise<{ ok: true; account: AccountRow; key: KeyRow | null } | { ok: false; reason: 'name_taken' }>
  /**
   * Disables (at: unix ms) or enables again (at: null) the named account; a disable ends its dashboard sessions
   * and is refused for `actorId`'s own account and for the last active administrator. `account` is as it was.
   */
  setDisabled(
    name: string,
    at: number | null,
    actorId: number | null,
    within?: (tx: Tx, account: AccountRow, sessionsEnded: number) => unknown,
  ): Promise<Disabled | Refusal>
  /**
   * Inside the caller's transaction (a report closed by disabling its owner): setDisabled's disable; `then` runs
   * there with the outcome, and a refusal thrown there rolls the caller's change back. SQLite: done on return.
   */
  disableIn(
    tx: Tx,
    name: string,
    at: number,
    actorId: number | null,
    then: (tx: Tx, outcome: Disabled | Refusal) => unknown,
  ): Written<unknown>
  /** Deletes the named account (keys, sessions, mailboxes, webhooks, identity go); its links stay, or (withLinks) go. */
  deleteAccount(
    name: string,
    withLinks: boolean,
    actorId: number | null,
    within?: (tx: Tx, account: AccountRow, links: number) => unknown,
  ): Promise<
    { ok: true; account: AccountRow; links: number; deletedLinks: { code: string; domain: string }[] } | Refusal
  >
  /** The named account's new password hash, its sessions ended; null: no such account. */
  setPassword(
    name: string,
    hash: string,
    within?: (tx: Tx, account: AccountRow, sessionsEnded: number) => unknown,
  ): Promise<{ account: AccountRow; sessionsEnded: number } | null>
  /** A key for the named account (the CLI: no bound); null: no such account. */
  createKey(
    name: string,
    key: NewKey,
    now: number,
    within?: (tx: Tx, account: AccountRow, key: KeyRow) => unknown,
  ): Promise<{ account: AccountRow; key: KeyRow } | null>
  /** A key under `max` active keys; revoked keys beyond the `keepRevoked` latest go in the same transaction. */
  createKeyUnder(
    accountId: number,
    key: NewKey,
    now: number,
    limits: { max: number; keepRevoked: number },
    within?: (tx: Tx, account: AccountRow, key: KeyRow) => unknown,
  ): Promise<{ ok: true; account: AccountRow; key: KeyRow } | { ok: false; reason: 'full' | 'not_found' }>
  /** The label and scopes of one of the account's active keys; null: it has no such active key. */
  editKeyOfAccount(
    id: number,
    accountId: number,
    label: string,
    scopes: string,
    within?: (tx: Tx, before: KeyWithAccount, after: KeyRow) => unknown,
  ): Promise<{ before: KeyWithAccount; after: KeyRow } | null>
  /** Revokes one of the account's keys: the key as revoked; null when it has no such key not revoked yet. */
  revokeKeyOfAccount(
    id: number,
    accountId: number,
    now: number,
    within?: (tx: Tx, key: KeyWithAccount) => unknown,
  ): Promise<KeyWithAccount | null>
  /** Revokes a key of any account (the CLI): the key as revoked; null when there is no such key not revoked yet. */
  revokeKey(id: number, now: number, within?: (tx: Tx, key: KeyWithAccount) => unknown): Promise<KeyWithAccount | null>
}
