// The audit log in the Admin section (administrators only): a GET form of filters and a page of rows, newest
// first, with an "Older" link carrying the filters and the last row's id.
import { Elysia } from 'elysia'
import { ACTIONS, actorText, type AuditFilter, type AuditPage, type AuditReader, type AuditRow } from '../audit'
import { AppError } from '../kernel/errors'
import { escapeHtml, timeHtml } from '../web/render'
import { AUDIT, tabs } from './admin-tabs'
import type { Session } from './sessions'
import type { Shell } from './shell'

const e = escapeHtml
/** The groups of actions the filter offers before the actions themselves. */
const GROUPS = [...new Set(ACTIONS.map((a) => a.split('.')[0]!))]
const FIELDS = ['actor', 'action', 'from', 'to'] as const

function filterForm(f: AuditFilter, error: { field: string; text: string } | null): string {
  const invalid = (field: string) =>
    error?.field === field ? ` aria-invalid="true" aria-describedby="audit-error"` : ''
  const option = (value: string, label: string) =>
    `<option value="${e(value)}"${f.action === value ? ' selected' : ''}>${e(label)}</option>`
  return `<form method="get" action="${AUDIT}" class="audit-filters" role="search" aria-label="Filter the audit log">
<div class="field"><label for="audit-actor">Actor</label><input id="audit-actor" name="actor" maxlength="64" autocomplete="off" spellcheck="false" placeholder="account name, or cli" value="${e(f.actor ?? '')}"${invalid('actor')}></div>
<div class="field"><label for="audit-action">Action</label><select id="audit-action" name="action"${invalid('action')}>${option('', 'Every action')}<optgroup label="All of a kind">${GROUPS.map((g) => option(g, `${g}.*`)).join('')}</optgroup><optgroup label="One action">${ACTIONS.map((a) => option(a, a)).join('')}</optgroup></select></div>
<div class="field"><label for="audit-from">From</label><input id="audit-from" name="from" type="date" value="${e(f.from ?? '')}"${invalid('from')}></div>
<div class="field"><label for="audit-to">To</label><input id="audit-to" name="to" type="date" value="${e(f.to ?? '')}"${invalid('to')}></div>
<div class="actions"><button type="submit">Filter</button><a href="${AUDIT}">Clear</a></div>
${error ? `<p class="error" id="audit-error" role="alert">${e(error.text)}</p>` : ''}
</form>`
}

function rowHtml(r: AuditRow): string {
  const actor =
    r.actor_kind === 'account'
      ? `${e(r.actor_name ?? '')} <span class="sub">#${r.actor_id}</span>`
      : `<span class="actor-${r.actor_kind}">${e(actorText(r))}</span>`
  // data-label: on a phone each row is a small block of labelled cells (table.stack in dashboard.css).
  return `<tr><td class="nowrap" data-label="Time">${timeHtml(r.at)}</td><td data-label="Actor">${actor}</td><td data-label="Action"><code>${e(r.action)}</code></td><td class="audit-target wide" data-label="Target">${e(r.target)}${r.detail ? `<span class="sub">${e(r.detail)}</span>` : ''}</td><td class="nowrap" data-label="Address">${e(r.address)}</td></tr>`
}

export function createAuditPage(deps: { shell: Shell; audit: AuditReader; keepDays: () => number }) {
  const { shell, audit } = deps

  async function page(request: Request, s: Session): Promise<Response> {
    const query = new URL(request.url).searchParams
    const filter: AuditFilter = {}
    for (const k of FIELDS) {
      const v = query.get(k)?.trim()
      if (v) filter[k] = v.slice(0, 100)
    }
    const before = query.get('before')
    let result: AuditPage = { rows: [], next: null }
    let error: { field: string; text: string } | null = null
    try {
      result = await audit.page({ ...filter, before: before ?? undefined })
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err
      error = { field: /"(\w+)"/.exec(err.message)?.[1] ?? '', text: err.message }
    }
    const kept = new URLSearchParams(Object.entries(filter) as [string, string][])
    const older = result.next ? `${AUDIT}?${new URLSearchParams([...kept, ['before', result.next]])}` : null
    const newest = before ? `${AUDIT}${kept.size ? `?${kept}` : ''}` : null
    const filtered = kept.size > 0
    const table =
      result.rows.length === 0
        ? `<p class="empty">${error ? 'Nothing shown: the filter above needs a change.' : filtered || before ? 'No rows match these filters.' : 'Nothing recorded yet.'}</p>`
        : `<div class="table-wrap"><table class="audit stack"><caption class="visually-hidden">Audit log, newest first</caption><thead><tr><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Address</th></tr></thead><tbody>${result.rows.map(rowHtml).join('')}</tbody></table></div>`
    const pager =
      older || newest
        ? `<nav class="pager" aria-label="Pages of the audit log">${newest ? `<a href="${e(newest)}">← Newest</a>` : '<span></span>'}${older ? `<a href="${e(older)}" rel="next">Older →</a>` : '<span></span>'}</nav>`
        : ''
    const content = `<h1>Admin</h1>
${tabs('audit')}
<section class="card" aria-labelledby="audit-h">
<h2 id="audit-h">Audit log</h2>
<p class="muted">Who changed what: accounts, keys, webhooks and settings, every sign-in (failed ones too) and every admin action, newest first. Rows are kept ${e(String(deps.keepDays()))} days (<code>audit.keep_days</code>).</p>
${filterForm(filter, error)}
${table}
${pager}
</section>`
    return shell.render(request, s, { section: 'admin', title: 'Admin · Audit log', content })
  }

  return new Elysia({ name: 'dashboard-audit' }).get(AUDIT, async ({ request }) => {
    const s = await shell.requireAdmin(request)
    if (s instanceof Response) return s
    return page(request, s)
  })
}
