// Accounts: their creation, state, password and deletion, each with its audit row in one transaction.
import { accountTarget, SYSTEM, type Who } from '../audit'
import { SCOPES, type Scope } from '../kernel/caller'
import { AppError } from '../kernel/errors'
import { actorIdOf, type AccountContext } from './context'
import { newKey } from './keys'
import type { AccountSummaryRow, Refusal } from './storage/contract'

const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/

/** Accounts on one page of listAccounts. */
export const ACCOUNT_PAGE_MAX = 50

/** Why a disable or a deletion was refused (the storage decides it on the rows of its transaction), as the answer. */
function refusalError(what: 'disable' | 'delete', name: string, refusal: Refusal): AppError {
  if (refusal.reason === 'not_found') return new AppError(404, 'not_found', `No account named "${name}".`)
  if (refusal.reason === 'own_account')
    return new AppError(
      409,
      'own_account',
      `You cannot ${what} your own account: ask another administrator, or use the command line.`,
    )
  return new AppError(
    409,
    'last_admin',
    `${refusal.account.name} is the last active administrator: make another account an administrator first, so that someone can still manage this service.`,
  )
}

async function hashPassword(password: string) {
  if (password.length < 8 || password.length > 128)
    throw new AppError(400, 'invalid_parameter', 'The dashboard password must be 8 to 128 characters.')
  return Bun.password.hash(password, 'argon2id')
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

export function accountChanges<Tx>({ store, clock, record, forgetKeys }: AccountContext<Tx>) {
  return {
    /** `by` may name the new account itself (open sign-up: the account made itself), given its row. */
    async createAccount(
      input: { name: string; admin?: boolean; password?: string; scopes?: Scope[] },
      by: Who | ((account: { id: number; name: string }) => Who) = SYSTEM,
    ) {
      if (!ACCOUNT_NAME.test(input.name))
        throw new AppError(
          400,
          'invalid_parameter',
          'Account names are 1-64 characters: letters, digits, . _ @ -, starting with a letter or digit.',
        )
      // Names compare in any case: Carol is refused when carol exists, and the message names carol.
      const taken = (existing: string) =>
        new AppError(
          409,
          'account_exists',
          existing === input.name
            ? `The account "${existing}" exists already.`
            : `The account "${existing}" exists already: account names are the same in any case, so "${input.name}" is taken.`,
        )
      // Before the hash, so that a taken name costs no hash; the storage checks again in its write.
      const existing = await store.accountByNameAnyCase(input.name)
      if (existing) throw taken(existing.name)
      const hash = input.password !== undefined ? await hashPassword(input.password) : null
      const scopes = input.scopes ?? [...SCOPES]
      const made = newKey(scopes, 'created with the account')
      const done = await store.createAccount(
        { name: input.name, passwordHash: hash, admin: !!input.admin, now: clock(), key: made.stored },
        (tx, account, key) =>
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
    disableWithin(tx: Tx, name: string, by: Who = SYSTEM): unknown {
      forgetKeys()
      return store.disableIn(tx, name, clock(), actorIdOf(by), (tx, done) => {
        if (!done.ok) throw refusalError('disable', name, done)
        // A lookup that reads before the caller's commit does not keep its answer (on SQLite none can run in between).
        forgetKeys()
        const ended = done.sessionsEnded
        return record(tx, by, {
          action: 'account.disable',
          target: accountTarget(done.account.name, done.account.id),
          detail: `${ended} session${ended === 1 ? '' : 's'} ended`,
        })
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
          detail: opts.withLinks
            ? `its ${links} link${links === 1 ? '' : 's'} deleted with it`
            : `its ${links} link${links === 1 ? '' : 's'} kept, owned by nobody`,
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
        record(tx, by, {
          action: 'account.password',
          target: accountTarget(account.name, account.id),
          detail: `${ended} session${ended === 1 ? '' : 's'} ended`,
        }),
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
  }
}
