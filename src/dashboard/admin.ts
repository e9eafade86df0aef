// The Admin section's accounts, for administrators only (shell.requireAdmin: others get a 403): the list, creating
// one (its first key shown once), disabling, enabling, a new password and deleting, each with its audit row.
import { Elysia } from 'elysia'
import { ACCOUNT_PAGE_MAX } from '../accounts'
import { byAccount } from '../audit'
import { AppError } from '../kernel/errors'
import { escapeHtml, timeHtml } from '../web/render'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'
import { count } from './admin-figures'
import { ADMIN, AUDIT, tabs } from './admin-tabs'

/** Page numbers people can ask for (far beyond any real list: the page count bounds it again). */
const MAX_PAGE = 100_000

interface CreateForm {
  name?: string
  admin?: boolean
  error?: { field: 'name' | 'password'; text: string }
}
/** A new account's first key, kept for the one page that shows it. */
interface NewAccount {
  name: string
  key: string
  hasPassword: boolean
  admin: boolean
}

function createForm(s: Session, f: CreateForm): string {
  const err = f.error
  const described = (field: 'name' | 'password', hint: string) =>
    err?.field === field
      ? ` aria-describedby="${hint} acc-${field}-error" aria-invalid="true"`
      : ` aria-describedby="${hint}"`
  const message = (field: 'name' | 'password') =>
    err?.field === field ? `<span class="error" id="acc-${field}-error">${escapeHtml(err.text)}</span>` : ''
  return `<section class="card" aria-labelledby="new-account-h">
<h2 id="new-account-h">Create an account</h2>
<form method="post" action="${ADMIN}/accounts" class="form-grid admin-create" novalidate>
<input type="hidden" name="_csrf" value="${escapeHtml(s.csrf)}">
<div class="field">
<label for="acc-name">Account name</label>
<input id="acc-name" name="name" required maxlength="64" autocomplete="off" spellcheck="false" value="${escapeHtml(f.name ?? '')}"${described('name', 'acc-name-hint')}>
<span class="hint" id="acc-name-hint">Letters, digits and <code>. _ @ -</code>, up to 64.</span>
${message('name')}
</div>
<div class="field">
<label for="acc-password">Dashboard password <span class="optional">(optional)</span></label>
<input id="acc-password" name="password" type="password" maxlength="128" autocomplete="new-password"${described('password', 'acc-password-hint')}>
<span class="hint" id="acc-password-hint">8 to 128 characters. Without one, the account uses the API only.</span>
${message('password')}
</div>
<div class="field check">
<input id="acc-admin" name="admin" type="checkbox" value="1" aria-describedby="acc-admin-hint"${f.admin ? ' checked' : ''}>
<label for="acc-admin">Administrator</label>
<span class="hint" id="acc-admin-hint">Sees every account and the service's health, and can disable accounts.</span>
</div>
<div class="actions"><button type="submit">Create account</button></div>
</form>
</section>`
}

function createdCard(name: string, key: string, hasPassword: boolean, admin: boolean): string {
  return `<section class="card created" aria-labelledby="created-h">
<h2 id="created-h">Account <q>${escapeHtml(name)}</q> created${admin ? ' (administrator)' : ''}</h2>
<p class="shown-once"><strong>Shown once.</strong> Copy its API key now and hand it over safely: only its hash is stored, so it cannot be shown again. A lost key can only be replaced by a new one.</p>
<div class="secret"><label class="visually-hidden" for="new-key">API key of ${escapeHtml(name)}</label><input id="new-key" readonly value="${escapeHtml(key)}" spellcheck="false" autocomplete="off"><button type="button" class="copy" data-copy="new-key" hidden>Copy</button></div>
<p class="muted">The key has every scope. ${hasPassword ? `${escapeHtml(name)} can also sign in here with the password you chose.` : `No dashboard password: ${escapeHtml(name)} uses the API with this key.`}</p>
</section>`
}

type AccountList = Awaited<ReturnType<DashboardDeps['accounts']['listAccounts']>>
type Account = NonNullable<Awaited<ReturnType<DashboardDeps['accounts']['account']>>>

/** A time in a narrow cell: it may break between the day and the time of day, nowhere else. */
function whenCell(ms: number | null): string {
  return timeHtml(ms, { split: true })
}

function accountsTable(s: Session, list: AccountList): string {
  if (list.total === 0) return '<p class="empty">No accounts yet.</p>'
  const rows = list.accounts
    .map((a) => {
      const self = a.id === s.accountId
      const nameCell = `<span class="acc-name">${escapeHtml(a.name)}</span>${self ? ' <span class="tag">you</span>' : ''}${a.hasPassword ? '' : a.sso ? '<span class="sub">single sign-on</span>' : '<span class="sub">API only</span>'}`
      const status =
        a.disabled === null
          ? '<span class="badge on">Active</span>'
          : `<span class="badge off">Disabled</span><span class="sub">since ${timeHtml(a.disabled)}</span>`
      const hidden = `<span class="visually-hidden"> ${escapeHtml(a.name)}</span>`
      const password = `<a href="${ADMIN}/account/${a.id}/password">Set password${hidden}</a>`
      let action: string
      if (self) action = `<span class="sub">Cannot disable yourself</span><span class="acc-links">${password}</span>`
      else {
        const enable = a.disabled !== null
        action = `<form method="post" action="${ADMIN}/accounts/${enable ? 'enable' : 'disable'}"><input type="hidden" name="_csrf" value="${escapeHtml(s.csrf)}"><input type="hidden" name="account" value="${escapeHtml(a.name)}"><input type="hidden" name="page" value="${list.page}"><button type="submit" class="${enable ? 'secondary' : 'secondary warn-button'}">${enable ? 'Enable' : 'Disable'}${hidden}</button></form><span class="acc-links">${password}<a href="${ADMIN}/account/${a.id}/delete" class="danger-link">Delete${hidden}</a></span>`
      }
      // data-label: on a phone each account is a small block of labelled cells (table.stack in dashboard.css).
      return `<tr${a.disabled !== null ? ' class="is-disabled"' : ''}><th scope="row">${nameCell}</th><td data-label="Role">${a.admin ? '<span class="badge admin">Admin</span>' : 'User'}</td><td class="date" data-label="Created">${whenCell(a.created)}</td><td class="date" data-label="Last sign-in">${whenCell(a.lastSignin)}</td><td data-label="Status">${status}</td><td class="n" data-label="Links">${count(a.links)}</td><td class="n" data-label="Keys">${count(a.keys)}</td><td class="n" data-label="Mailboxes">${count(a.mailboxes)}</td><td class="acc-actions wide">${action}</td></tr>`
    })
    .join('')
  const pager =
    list.pages > 1
      ? `<nav class="pager" aria-label="Pages of accounts">${list.page > 1 ? `<a href="${ADMIN}?page=${list.page - 1}" rel="prev">← Previous</a>` : '<span></span>'}<span class="muted">Page ${list.page} of ${list.pages}</span>${list.page < list.pages ? `<a href="${ADMIN}?page=${list.page + 1}" rel="next">Next →</a>` : '<span></span>'}</nav>`
      : ''
  return `<div class="table-wrap"><table class="accounts stack"><thead><tr><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Created</th><th scope="col">Last sign-in</th><th scope="col">Status</th><th scope="col" class="n">Links</th><th scope="col" class="n">Keys</th><th scope="col" class="n">Mailboxes</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead><tbody>${rows}</tbody></table></div>${pager}`
}

export function createAdminSection(deps: DashboardDeps) {
  const { shell, accounts, links, clientIp } = deps
  const by = (request: Request, s: Session) => byAccount(s.caller, clientIp(request))

  function pageOf(raw: string | null): number {
    const n = Number(raw)
    return Number.isInteger(n) && n >= 1 ? Math.min(n, MAX_PAGE) : 1
  }

  /**
   * The accounts, a page of them, and the form; with ?created=ID the new account's key, the one time it is
   * shown (a reload says it was); with ?form=ID the refused form as it was sent (never its password).
   */
  /** The accounts and the create form: a refused form (?form=ID) as it was sent, or what was typed before the session ended. */
  async function accountsPage(request: Request, s: Session, draft?: CreateForm) {
    const url = new URL(request.url)
    const owner = shell.ownerOf(s)
    const form = (await shell.refusedState<CreateForm>(request, owner)) ?? draft ?? {}
    const createdId = url.searchParams.get('created')
    const made = createdId === null ? null : await shell.flash.take<NewAccount>(owner, 'account key', createdId)
    const list = await accounts.listAccounts({ page: pageOf(url.searchParams.get('page')) })
    const notice =
      createdId !== null && !made
        ? ({
            kind: 'ok',
            text: "The new account's key was shown once, and is not shown again: only its hash is kept.",
          } as const)
        : undefined
    const content = `<h1>Admin</h1>
${tabs('accounts')}
${made ? createdCard(made.name, made.key, made.hasPassword, made.admin) : ''}
${createForm(s, form)}
<section class="card" aria-labelledby="accounts-h">
<h2 id="accounts-h">Accounts <span class="count">${count(list.total)}</span></h2>
<p class="muted">Disabling an account refuses its API keys at once and signs it out everywhere; enabling it gives them back. A new password signs it out everywhere too. Every change here is in the <a href="${AUDIT}">audit log</a>.</p>
${accountsTable(s, list)}
</section>`
    return shell.render(request, s, { section: 'admin', title: 'Admin · Accounts', content, notice })
  }

  const ACCOUNT_ID = /^[1-9][0-9]{0,15}$/
  const accountOf = async (idText: string) => (ACCOUNT_ID.test(idText) ? accounts.account(Number(idText)) : null)

  function noAccountPage(request: Request, s: Session) {
    const content = `<h1>Admin</h1>
${tabs('accounts')}
<section class="card"><h2>No such account</h2><p>There is no such account: it may have been deleted.</p><p><a href="${ADMIN}">Back to the accounts</a></p></section>`
    return shell.render(request, s, { section: 'admin', title: 'Admin · No such account', content, status: 404 })
  }

  /** Why `s` may not disable or delete account `a` (oneself, the last active admin), or null. */
  async function refusal(s: Session, a: Account, what: 'disable' | 'delete'): Promise<string | null> {
    if (a.id === s.accountId)
      return `You cannot ${what} your own account: ask another administrator, or use the command line.`
    if (a.admin && a.disabled === null && (await accounts.activeAdmins()) <= 1)
      return `${a.name} is the last active administrator: make another account an administrator first.`
    return null
  }

  const facts = (a: Account) => `<dl class="facts">
<dt>Account</dt><dd>${escapeHtml(a.name)}${a.admin ? ' <span class="badge admin">Admin</span>' : ''}</dd>
<dt>Created</dt><dd>${timeHtml(a.created)}</dd>
<dt>Last sign-in</dt><dd>${timeHtml(a.lastSignin)}</dd>
<dt>Status</dt><dd>${a.disabled === null ? 'Active' : `Disabled since ${timeHtml(a.disabled)}`}</dd>
<dt>Owns</dt><dd>${count(a.links)} link${a.links === 1 ? '' : 's'}, ${count(a.keys)} active key${a.keys === 1 ? '' : 's'}, ${count(a.mailboxes)} mailbox${a.mailboxes === 1 ? '' : 'es'}</dd>
</dl>`

  /** "Delete this account?": what it owns, the choice for its links, and the form (no script needed). */
  async function deletePage(request: Request, s: Session, idText: string) {
    const a = await accountOf(idText)
    if (!a) return noAccountPage(request, s)
    const refused = await refusal(s, a, 'delete')
    const form = refused
      ? `<p class="notice error" role="alert">${escapeHtml(refused)}</p><p><a href="${ADMIN}">Back to the accounts</a></p>`
      : `<form method="post" action="${ADMIN}/account/${a.id}/delete">
<input type="hidden" name="_csrf" value="${escapeHtml(s.csrf)}">
<fieldset><legend>Its ${count(a.links)} link${a.links === 1 ? '' : 's'}</legend>
<div class="field check"><input type="radio" id="links-keep" name="links" value="keep" checked><label for="links-keep">Keep them, owned by nobody: they go on redirecting</label></div>
<div class="field check"><input type="radio" id="links-delete" name="links" value="delete"><label for="links-delete">Delete them too, with their statistics</label></div>
</fieldset>
<p class="warn-text">Its API keys, sessions, mailboxes (with their messages) and webhooks are deleted with it. This cannot be undone.</p>
<div class="actions"><button type="submit" class="danger">Delete ${escapeHtml(a.name)}</button><a href="${ADMIN}">Cancel</a></div>
</form>`
    const content = `<h1>Admin</h1>
${tabs('accounts')}
<section class="card confirm admin-confirm" aria-labelledby="delete-h">
<h2 id="delete-h">Delete the account ${escapeHtml(a.name)}?</h2>
${facts(a)}
${form}
</section>`
    return shell.render(request, s, { section: 'admin', title: `Admin · Delete ${a.name}`, content })
  }

  /** Setting a new password for an account (its sessions end); a refused one comes back with its message. */
  async function passwordPage(request: Request, s: Session, idText: string) {
    const a = await accountOf(idText)
    if (!a) return noAccountPage(request, s)
    const refused = await shell.refusedState<{ error: string }>(request, shell.ownerOf(s))
    const self = a.id === s.accountId
    const content = `<h1>Admin</h1>
${tabs('accounts')}
<section class="card confirm admin-confirm" aria-labelledby="password-h">
<h2 id="password-h">A new password for ${escapeHtml(a.name)}</h2>
${facts(a)}
<form method="post" action="${ADMIN}/account/${a.id}/password" novalidate>
<input type="hidden" name="_csrf" value="${escapeHtml(s.csrf)}">
<div class="field">
<label for="new-password">New dashboard password</label>
<input id="new-password" name="password" type="password" required minlength="8" maxlength="128" autocomplete="new-password" aria-describedby="new-password-hint${refused ? ' new-password-error' : ''}"${refused ? ' aria-invalid="true"' : ''}>
<span class="hint" id="new-password-hint">8 to 128 characters. Hand it over safely; ${escapeHtml(a.name)} can sign in with it at once.</span>
${refused ? `<span class="error" id="new-password-error">${escapeHtml(refused.error)}</span>` : ''}
</div>
<p class="warn-text">${self ? 'You are signed out everywhere, here too: sign in again with the new password.' : `${escapeHtml(a.name)} is signed out everywhere. Its API keys keep working.`}</p>
<div class="actions"><button type="submit">Set the password</button><a href="${ADMIN}">Cancel</a></div>
</form>
</section>`
    return shell.render(request, s, { section: 'admin', title: `Admin · Password of ${a.name}`, content })
  }

  /** Which field an AppError of createAccount is about (its message names it). */
  const fieldOf = (err: AppError): 'name' | 'password' => (/password/i.test(err.message) ? 'password' : 'name')

  return new Elysia({ name: 'dashboard-admin' })
    .get(ADMIN, async ({ request }) => {
      const s = await shell.requireAdmin(request)
      if (s instanceof Response) return s
      // Typed before the session ended (see shell.requireForm): the form shows it again.
      const d = shell.draft(request)
      return accountsPage(request, s, d ? { name: d.get('name') ?? '', admin: d.get('admin') === '1' } : undefined)
    })
    .post(`${ADMIN}/accounts`, async ({ request }) => {
      const s = await shell.requireForm(request, { page: ADMIN, keep: ['name', 'admin'], admin: true })
      if (s instanceof Response) return s
      const fields = await shell.form(request, s)
      const name = (fields.get('name') ?? '').trim()
      const password = fields.get('password') ?? ''
      const admin = fields.get('admin') === '1'
      try {
        const { account, key } = await accounts.createAccount(
          { name, password: password === '' ? undefined : password, admin },
          by(request, s),
        )
        // The key waits for the page redirected to sealed in the database (flash.ts): never in clear, in a URL or a cookie.
        const id = await shell.flash.put(shell.ownerOf(s), 'account key', {
          name: account.name,
          key: key.key,
          hasPassword: password !== '',
          admin,
        } satisfies NewAccount)
        // The last page: where the new account is.
        return shell.seeOther(
          `${ADMIN}?page=${Math.max(1, Math.ceil((await accounts.count()) / ACCOUNT_PAGE_MAX))}&created=${id}`,
        )
      } catch (err) {
        if (err instanceof AppError && err.status < 500)
          return shell.refused(shell.ownerOf(s), ADMIN, {
            name: name.slice(0, 200),
            admin,
            error: { field: fieldOf(err), text: err.message },
          } satisfies CreateForm)
        throw err
      }
    })
    .post(`${ADMIN}/accounts/:action`, async ({ request, params }) => {
      const s = await shell.requireAdmin(request, ADMIN)
      if (s instanceof Response) return s
      if (params.action !== 'disable' && params.action !== 'enable') throw new AppError(404, 'not_found', 'Not found.')
      const fields = await shell.form(request, s)
      const name = fields.get('account') ?? ''
      const back = `${ADMIN}?page=${pageOf(fields.get('page'))}`
      const disable = params.action === 'disable'
      try {
        // Its sessions end in the same transaction (and oneself, or the last active admin, is refused there).
        const done = await accounts.setDisabled(name, disable, by(request, s))
        return shell.seeOther(back, {
          kind: 'ok',
          text: disable
            ? `${done.name} is disabled: its API keys are refused and it is signed out everywhere.`
            : `${done.name} is enabled again: its API keys work, and it can sign in.`,
        })
      } catch (err) {
        if (err instanceof AppError && err.status < 500)
          return shell.seeOther(back, { kind: 'error', text: err.message })
        throw err
      }
    })
    .get(`${ADMIN}/account/:id/delete`, async ({ request, params }) => {
      const s = await shell.requireAdmin(request)
      if (s instanceof Response) return s
      return deletePage(request, s, params.id)
    })
    .post(`${ADMIN}/account/:id/delete`, async ({ request, params }) => {
      const s = await shell.requireAdmin(request, ADMIN)
      if (s instanceof Response) return s
      const fields = await shell.form(request, s)
      const a = await accountOf(params.id)
      if (!a)
        return shell.seeOther(ADMIN, {
          kind: 'error',
          text: 'That account does not exist any more: nothing was deleted.',
        })
      const withLinks = fields.get('links') === 'delete'
      try {
        const done = await accounts.deleteAccount(a.name, { withLinks }, by(request, s))
        // The links deleted with it leave this process's cache of visited links.
        links.forget(done.deletedLinks)
        return shell.seeOther(ADMIN, {
          kind: 'ok',
          text: `${done.name} is deleted, with its keys, mailboxes and webhooks; ${withLinks ? `its ${done.links} link${done.links === 1 ? '' : 's'} too` : `its ${done.links} link${done.links === 1 ? '' : 's'} stay, owned by nobody`}.`,
        })
      } catch (err) {
        if (err instanceof AppError && err.status < 500)
          return shell.seeOther(ADMIN, { kind: 'error', text: err.message })
        throw err
      }
    })
    .get(`${ADMIN}/account/:id/password`, async ({ request, params }) => {
      const s = await shell.requireAdmin(request)
      if (s instanceof Response) return s
      return passwordPage(request, s, params.id)
    })
    .post(`${ADMIN}/account/:id/password`, async ({ request, params }) => {
      const page = `${ADMIN}/account/${ACCOUNT_ID.test(params.id) ? params.id : 0}/password`
      const s = await shell.requireAdmin(request, page)
      if (s instanceof Response) return s
      const fields = await shell.form(request, s)
      const a = await accountOf(params.id)
      if (!a)
        return shell.seeOther(ADMIN, {
          kind: 'error',
          text: 'That account does not exist any more: no password was set.',
        })
      try {
        const done = await accounts.setPassword(a.name, fields.get('password') ?? '', by(request, s))
        return shell.seeOther(ADMIN, {
          kind: 'ok',
          text: `${done.name} has a new password; ${done.sessionsEnded} session${done.sessionsEnded === 1 ? '' : 's'} ended.`,
        })
      } catch (err) {
        if (err instanceof AppError && err.status < 500)
          return shell.refused(shell.ownerOf(s), page, { error: err.message })
        throw err
      }
    })
}
