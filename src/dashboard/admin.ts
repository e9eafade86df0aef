// The dashboard's Admin section, for administrator accounts only (shell.requireAdmin: others get a 403):
// every account with what it owns and its last sign-in, creating one (its first key shown once, on the
// page the POST redirects to: it waits for that one GET in the server's memory, bound to the session),
// disabling and enabling, setting a new password (its sessions end), deleting one (a confirmation page
// first, where the admin chooses whether its links stay, owned by nobody, or go with it) — never one's
// own account, never the last active administrator (the account service refuses those, for the CLI too),
// each change with its audit row (audit/service.ts); and the service's health — the /healthz check and the /metrics numbers drawn
// for people (big numbers, and SVG bars drawn with presentation attributes, since the CSP forbids inline
// styles), kept up to date while it is open: assets/app.js polls GET /dashboard/admin/health.json (the same
// figures, formatted here) and puts them in place; without JavaScript, a reload does it.
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { ACCOUNT_PAGE_MAX } from '../accounts'
import { byAccount } from '../audit'
import { AppError } from '../kernel/errors'
import type { MetricFamily } from '../kernel/metrics'
import { escapeHtml } from '../web/render'
import { VERSION } from '../kernel/version'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'
import { when } from './shell'
import { ADMIN, AUDIT, HEALTH, tabs } from './admin-tabs'

/** Page numbers people can ask for (far beyond any real list: the page count bounds it again). */
const MAX_PAGE = 100_000

// ---------------------------------------------------------------------------------------------------------
// Numbers as people read them

// Made at the first number shown, not when the module loads: the first Intl.NumberFormat loads its locale
// data (~3 ms), which serve's first answer should not wait for.
let integer: Intl.NumberFormat | undefined
export const count = (n: number) => (integer ??= new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })).format(n)

/** 1536 → "1.5 KiB". */
export function bytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB']
  let v = n
  let u = 0
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return u === 0 ? `${count(v)} bytes` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`
}

/** 93784 → "1 d 2 h"; 125 → "2 min 5 s". The two largest units. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds))
  const parts: [number, string][] = [
    [Math.floor(s / 86400), 'd'],
    [Math.floor((s % 86400) / 3600), 'h'],
    [Math.floor((s % 3600) / 60), 'min'],
    [s % 60, 's'],
  ]
  const first = parts.findIndex(([v]) => v > 0)
  if (first < 0) return '0 s'
  return parts
    .slice(first, first + 2)
    .filter(([v]) => v > 0)
    .map(([v, unit]) => `${v} ${unit}`)
    .join(' ')
}

// ---------------------------------------------------------------------------------------------------------
// Drawing

export interface Bar {
  label: string
  value: number
  /** Colour: the accent (default), the warning colour or the danger colour. */
  tone?: 'warn' | 'danger'
}

/**
 * A labelled counter as a table of bars: the label, an SVG bar (its width a presentation attribute, in
 * a 0–100 box stretched to the cell) and the number. A table, so that screen readers read label and
 * number together; the bars themselves are decoration.
 */
export function barTable(caption: string, bars: Bar[], head: string): string {
  const drawn = barRows(bars)
  if (drawn.length === 0)
    return `<div class="metric-bars-empty"><p class="metric-bars-caption">${escapeHtml(caption)}</p><p class="empty">Nothing counted yet.</p></div>`
  const rows = drawn
    .map(
      (b) =>
        `<tr><th scope="row">${escapeHtml(b.label)}</th><td class="bar-cell"><svg viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true" focusable="false"><rect class="track" x="0" y="0" width="100" height="10"/><rect class="fill${b.tone ? ` ${b.tone}` : ''}" x="0" y="0" width="${b.width}" height="10"/></svg></td><td class="n">${b.count}</td></tr>`,
    )
    .join('')
  return `<table class="metric-bars"><caption>${escapeHtml(caption)}</caption><thead class="visually-hidden"><tr><th scope="col">${escapeHtml(head)}</th><th scope="col">Share of the largest</th><th scope="col">Count</th></tr></thead><tbody>${rows}</tbody></table>`
}

/** The rows of a bar table as drawn (none when nothing was counted): the page's and the live JSON's. */
export function barRows(bars: Bar[]): { label: string; width: string; count: string; tone: Bar['tone'] | null }[] {
  if (bars.every((b) => b.value === 0)) return []
  const max = Math.max(1, ...bars.map((b) => b.value))
  return bars.map((b) => ({
    label: b.label,
    width: (b.value === 0 ? 0 : Math.max(1, (100 * b.value) / max)).toFixed(2),
    count: count(b.value),
    tone: b.tone ?? null,
  }))
}

interface Stat {
  /** What the live page knows it by (data-stat). */
  key: string
  label: string
  value: string
  note?: string
  tone?: 'warn' | 'danger'
}
function stats(items: Stat[]): string {
  return `<dl class="big-numbers">${items
    .map(
      (s) =>
        `<div class="stat${s.tone ? ` ${s.tone}` : ''}" data-stat="${escapeHtml(s.key)}"><dt>${escapeHtml(s.label)}</dt><dd><span class="stat-value">${escapeHtml(s.value)}</span>${s.note ? `<span class="stat-note">${escapeHtml(s.note)}</span>` : ''}</dd></div>`,
    )
    .join('')}</dl>`
}

/** A bar table with what the live page needs to draw it again (data-bars: its key). */
interface Bars {
  key: string
  caption: string
  head: string
  bars: Bar[]
}
const barBlock = (b: Bars) => `<div class="metric-bars-live" data-bars="${escapeHtml(b.key)}">${barTable(b.caption, b.bars, b.head)}</div>`

// ---------------------------------------------------------------------------------------------------------
// The metrics, read from a snapshot

/** Reads a metrics snapshot: one value a family (summed over labels), or sums by one label. */
export function reader(families: MetricFamily[]) {
  const byName = new Map(families.map((f) => [f.name, f]))
  return {
    has: (name: string) => byName.has(name),
    value(name: string): number | null {
      const f = byName.get(name)
      return f ? f.samples.reduce((a, s) => a + s.value, 0) : null
    },
    by(name: string, label: string, key: (v: string) => string = (v) => v): Map<string, number> {
      const out = new Map<string, number>()
      for (const s of byName.get(name)?.samples ?? []) {
        const k = key(s.labels[label] ?? '')
        out.set(k, (out.get(k) ?? 0) + s.value)
      }
      return out
    },
  }
}

const VISIT_LABELS: Record<string, string> = {
  redirect: 'Redirected',
  frame: 'Shown in a frame',
  preview: 'Preview page',
  password_form: 'Password form',
  password_wrong: 'Wrong password',
  password_limited: 'Password attempts limited',
  password_busy: 'Password check busy',
  not_found: 'Not found',
  expired: 'Expired',
  stats_page: 'Statistics page',
  stats_limited: 'Statistics limited',
  unavailable: 'Stopped: disabled, banned or listed (451)',
}
const VISIT_TONES: Record<string, Bar['tone']> = { unavailable: 'warn', password_wrong: 'warn', password_limited: 'warn', password_busy: 'danger', not_found: 'warn', expired: 'warn', stats_limited: 'warn' }
const MEDIA_TONES: Record<string, Bar['tone']> = { unsupported: 'warn', private: 'warn', invalid: 'warn', upstream: 'danger', timeout: 'danger', busy: 'danger' }
const DELIVERY_LABELS: Record<string, string> = { ok: 'Delivered', failed: 'Failed for good', retry: 'Failed, retry planned', gone: 'Gone (410): endpoint disabled', private: 'Refused: private address' }
const DELIVERY_TONES: Record<string, Bar['tone']> = { failed: 'danger', retry: 'warn', gone: 'warn', private: 'warn' }

function barsOf(m: Map<string, number>, labels: Record<string, string> = {}, tones: Record<string, Bar['tone']> = {}): Bar[] {
  return [...m]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, value]) => ({ label: labels[k] ?? k, value, tone: tones[k] }))
}

/**
 * The size of the SQLite database on disk: the file and its write-ahead log. Null (the page shows "—") when it
 * cannot be read, and when there is none: on PostgreSQL, data_dir holds no database file.
 */
function databaseBytes(dataDir: string): number | null {
  try {
    const main = statSync(join(dataDir, 'linkbox.db')).size
    let wal = 0
    try {
      wal = statSync(join(dataDir, 'linkbox.db-wal')).size
    } catch {}
    return main + wal
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------------------------------------
// The pages

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
    err?.field === field ? ` aria-describedby="${hint} acc-${field}-error" aria-invalid="true"` : ` aria-describedby="${hint}"`
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
  const text = when(ms)
  const space = text.indexOf(' ')
  return space < 0 ? escapeHtml(text) : `<span class="nowrap">${escapeHtml(text.slice(0, space))}</span> <span class="nowrap">${escapeHtml(text.slice(space + 1))}</span>`
}

function accountsTable(s: Session, list: AccountList): string {
  if (list.total === 0) return '<p class="empty">No accounts yet.</p>'
  const rows = list.accounts
    .map((a) => {
      const self = a.id === s.accountId
      const nameCell = `<span class="acc-name">${escapeHtml(a.name)}</span>${self ? ' <span class="tag">you</span>' : ''}${a.hasPassword ? '' : a.sso ? '<span class="sub">single sign-on</span>' : '<span class="sub">API only</span>'}`
      const status = a.disabled === null
        ? '<span class="badge on">Active</span>'
        : `<span class="badge off">Disabled</span><span class="sub">since ${escapeHtml(when(a.disabled))}</span>`
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
  const { shell, accounts, links, metrics, config, clock, databaseProblem, clientIp } = deps
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
    const made = createdId === null ? null : (await shell.flash.take<NewAccount>(owner, 'account key', createdId))
    const list = await accounts.listAccounts({ page: pageOf(url.searchParams.get('page')) })
    const notice =
      createdId !== null && !made
        ? ({ kind: 'ok', text: "The new account's key was shown once, and is not shown again: only its hash is kept." } as const)
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
    if (a.id === s.accountId) return `You cannot ${what} your own account: ask another administrator, or use the command line.`
    if (a.admin && a.disabled === null && (await accounts.activeAdmins()) <= 1) return `${a.name} is the last active administrator: make another account an administrator first.`
    return null
  }

  const facts = (a: Account) => `<dl class="facts">
<dt>Account</dt><dd>${escapeHtml(a.name)}${a.admin ? ' <span class="badge admin">Admin</span>' : ''}</dd>
<dt>Created</dt><dd>${escapeHtml(when(a.created))}</dd>
<dt>Last sign-in</dt><dd>${escapeHtml(when(a.lastSignin))}</dd>
<dt>Status</dt><dd>${a.disabled === null ? 'Active' : `Disabled since ${escapeHtml(when(a.disabled))}`}</dd>
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
    const refused = (await shell.refusedState<{ error: string }>(request, shell.ownerOf(s)))
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

  /** Every figure of the health page, formatted, by card: what the page shows and health.json answers. */
  function healthModel() {
    const m = reader(metrics.snapshot())
    const n = (name: string) => m.value(name)
    const num = (name: string) => {
      const v = n(name)
      return v === null ? '—' : count(v)
    }
    const problem = databaseProblem()
    const dbBytes = databaseBytes(config.data_dir)
    const uptime = n('process_uptime_seconds')
    const rss = n('process_resident_memory_bytes')
    const since = uptime === null ? 'since start' : `in ${duration(uptime)}`
    const dropped = n('linkbox_clicks_dropped_total') ?? 0
    const buffer = n('linkbox_click_buffer') ?? 0
    const classes = m.by('linkbox_api_requests_total', 'status', (v) => (/^[1-5]\d\d$/.test(v) ? `${v[0]}xx` : 'other'))
    const apiBars: Bar[] = ['2xx', '3xx', '4xx', '5xx', 'other']
      .filter((c) => classes.has(c) || c === '2xx' || c === '4xx' || c === '5xx')
      .map((c) => ({ label: c, value: classes.get(c) ?? 0, tone: c === '5xx' ? 'danger' : c === '4xx' ? 'warn' : undefined }))
    const apiTotal = [...classes.values()].reduce((a, b) => a + b, 0)
    const oldest = n('linkbox_webhook_oldest_pending_seconds') ?? 0
    const cards = {
      status: [
        { key: 'version', label: 'Version', value: VERSION },
        { key: 'uptime', label: 'Uptime', value: uptime === null ? '—' : duration(uptime) },
        { key: 'memory', label: 'Memory', value: rss === null ? '—' : bytes(rss), note: 'resident' },
        { key: 'database', label: 'Database', value: dbBytes === null ? '—' : bytes(dbBytes), note: 'file and write-ahead log' },
      ],
      links: [
        { key: 'links', label: 'Links', value: num('linkbox_links'), note: `${num('linkbox_links_created_total')} created ${since}` },
        { key: 'clicks', label: 'Clicks written', value: num('linkbox_clicks_written_total'), note: since },
        { key: 'click-buffer', label: 'Click buffer', value: num('linkbox_click_buffer'), note: 'waiting for the next write', tone: buffer > 1000 ? 'warn' : undefined },
        { key: 'clicks-dropped', label: 'Dropped clicks', value: num('linkbox_clicks_dropped_total'), note: dropped > 0 ? 'writes kept failing' : 'none lost', tone: dropped > 0 ? 'danger' : undefined },
        { key: 'qr-waiting', label: 'QR waiting', value: num('linkbox_qr_waiting'), note: 'renderings queued' },
      ],
      api: [
        { key: 'api-answers', label: 'Answers', value: count(apiTotal), note: since },
        { key: 'api-5xx', label: 'Server errors', value: count(classes.get('5xx') ?? 0), note: '5xx answers', tone: (classes.get('5xx') ?? 0) > 0 ? 'danger' : undefined },
      ],
      mail: [
        { key: 'mailboxes', label: 'Mailboxes', value: num('linkbox_mailboxes') },
        { key: 'messages', label: 'Messages', value: num('linkbox_mail_messages'), note: `${num('linkbox_mail_received_total')} received ${since}` },
        { key: 'mail-bytes', label: 'Stored', value: n('linkbox_mail_bytes') === null ? '—' : bytes(n('linkbox_mail_bytes')!), note: 'as received' },
        { key: 'smtp', label: 'SMTP connections', value: num('linkbox_smtp_connections'), note: 'open now' },
        { key: 'mail-waiting', label: 'Waiting requests', value: num('linkbox_mail_waiting'), note: 'messages.json held open' },
      ],
      media: [
        { key: 'media-queue', label: 'Queue', value: num('linkbox_media_queue'), note: 'yt-dlp runs waiting' },
        { key: 'media-running', label: 'Running', value: num('linkbox_media_running'), note: 'yt-dlp runs' },
        { key: 'media-served', label: 'Served', value: n('linkbox_media_bytes_served_total') === null ? '—' : bytes(n('linkbox_media_bytes_served_total')!), note: since },
      ],
      hooks: [
        { key: 'outbox', label: 'Outbox', value: num('linkbox_webhook_outbox'), note: 'deliveries to send or retry' },
        { key: 'oldest-pending', label: 'Oldest pending', value: oldest > 0 ? duration(oldest) : 'none', note: 'age of the oldest event waiting', tone: oldest > 3600 ? 'warn' : undefined },
      ],
    } satisfies Record<string, Stat[]>
    const bars = {
      visits: { key: 'visits', caption: `Visits by outcome, ${since}`, head: 'Outcome', bars: barsOf(m.by('linkbox_visits_total', 'outcome'), VISIT_LABELS, VISIT_TONES) },
      api: { key: 'api', caption: 'Answers by status class', head: 'Status class', bars: apiBars },
      media: { key: 'media', caption: `Extractions by outcome, ${since}`, head: 'Outcome', bars: barsOf(m.by('linkbox_media_extractions_total', 'outcome'), {}, MEDIA_TONES) },
      hooks: { key: 'hooks', caption: `Delivery attempts by outcome, ${since}`, head: 'Outcome', bars: barsOf(m.by('linkbox_webhook_deliveries_total', 'outcome'), DELIVERY_LABELS, DELIVERY_TONES) },
    } satisfies Record<string, Bars>
    return { problem, read: when(clock()), cards, bars }
  }

  /** health.json: the figures as the page words them, for app.js to put in place (data-stat, data-bars). */
  function healthJson() {
    const model = healthModel()
    return {
      problem: model.problem,
      read: model.read,
      stats: Object.values(model.cards)
        .flat()
        .map((x: Stat) => ({ key: x.key, value: x.value, note: x.note ?? '', tone: x.tone ?? null })),
      bars: Object.values(model.bars).map((b) => ({ key: b.key, caption: b.caption, head: b.head, rows: barRows(b.bars) })),
    }
  }

  function healthPage(request: Request, s: Session) {
    const { problem, read, cards, bars } = healthModel()
    const status = problem === null
      ? `<section class="card health-status ok" aria-labelledby="status-h" data-health-status><h2 id="status-h"><span class="dot" aria-hidden="true"></span>Working</h2><p>The database can be written: <code>/readyz</code> answers <code>ok</code>.</p>`
      : `<section class="card health-status degraded" aria-labelledby="status-h" data-health-status><h2 id="status-h"><span class="dot" aria-hidden="true"></span>Degraded</h2><p>The database cannot be written: ${escapeHtml(problem)}. Visits and reads still work; <code>/readyz</code> answers 503, <code>/healthz</code> 200 naming the database's state.</p>`
    const statusCard = `${status}
${stats(cards.status)}
</section>`
    const links = `<section class="card" aria-labelledby="links-h"><h2 id="links-h">Links and clicks</h2>
${stats(cards.links)}
${barBlock(bars.visits)}
</section>`
    const api = `<section class="card" aria-labelledby="api-h"><h2 id="api-h">API</h2>
${stats(cards.api)}
${barBlock(bars.api)}
</section>`
    const mail = `<section class="card" aria-labelledby="mail-h"><h2 id="mail-h">Mail</h2>
${stats(cards.mail)}
</section>`
    const media = `<section class="card" aria-labelledby="media-h"><h2 id="media-h">Media</h2>
${stats(cards.media)}
${barBlock(bars.media)}
</section>`
    const hooks = `<section class="card" aria-labelledby="hooks-h"><h2 id="hooks-h">Webhooks</h2>
${stats(cards.hooks)}
${barBlock(bars.hooks)}
</section>`

    const content = `<h1>Admin</h1>
${tabs('health')}
<p class="muted health-read" id="health-read" data-live-health="${HEALTH}.json">Read <span id="health-read-at">${escapeHtml(read)}</span><span id="health-read-how">; reload for new numbers</span>. The same values, for a monitor, are at <a href="/metrics">/metrics</a> and <a href="/healthz">/healthz</a>.</p>
${statusCard}
<div class="health-grid">
${links}
${api}
${mail}
${media}
${hooks}
</div>`
    return shell.render(request, s, { section: 'admin', title: 'Admin · Health', content })
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
        const { account, key } = await accounts.createAccount({ name, password: password === '' ? undefined : password, admin }, by(request, s))
        // The key waits for the page redirected to sealed in the database (flash.ts): never in clear, in a URL or a cookie.
        const id = await shell.flash.put(shell.ownerOf(s), 'account key', { name: account.name, key: key.key, hasPassword: password !== '', admin } satisfies NewAccount)
        // The last page: where the new account is.
        return shell.seeOther(`${ADMIN}?page=${Math.max(1, Math.ceil((await accounts.count()) / ACCOUNT_PAGE_MAX))}&created=${id}`)
      } catch (err) {
        if (err instanceof AppError && err.status < 500)
          return shell.refused(shell.ownerOf(s), ADMIN, { name: name.slice(0, 200), admin, error: { field: fieldOf(err), text: err.message } } satisfies CreateForm)
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
        if (err instanceof AppError && err.status < 500) return shell.seeOther(back, { kind: 'error', text: err.message })
        throw err
      }
    })
    // The live page's figures: for a signed-in administrator only, as JSON (a 401 or 403 too, never a page).
    .get(`${HEALTH}.json`, async ({ request }) => {
      const json = (status: number, body: unknown) =>
        new Response(JSON.stringify(body), {
          status,
          headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' },
        })
      const s = await shell.session(request)
      if (!s) return json(401, { error: 'signed_out', message: 'Sign in again to see the figures.' })
      if (!s.admin) return json(403, { error: 'not_admin', message: 'This page is for administrator accounts.' })
      return metrics.refresh().then(() => json(200, healthJson()))
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
      if (!a) return shell.seeOther(ADMIN, { kind: 'error', text: 'That account does not exist any more: nothing was deleted.' })
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
        if (err instanceof AppError && err.status < 500) return shell.seeOther(ADMIN, { kind: 'error', text: err.message })
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
      if (!a) return shell.seeOther(ADMIN, { kind: 'error', text: 'That account does not exist any more: no password was set.' })
      try {
        const done = await accounts.setPassword(a.name, fields.get('password') ?? '', by(request, s))
        return shell.seeOther(ADMIN, {
          kind: 'ok',
          text: `${done.name} has a new password; ${done.sessionsEnded} session${done.sessionsEnded === 1 ? '' : 's'} ended.`,
        })
      } catch (err) {
        if (err instanceof AppError && err.status < 500) return shell.refused(shell.ownerOf(s), page, { error: err.message })
        throw err
      }
    })
    .get(HEALTH, async ({ request }) => {
      const s = await shell.requireAdmin(request)
      if (s instanceof Response) return s
      return metrics.refresh().then(() => healthPage(request, s))
    })
}
