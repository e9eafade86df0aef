// The admin's side of abuse handling: open reports closed with what was done (dismissed, link disabled, host
// banned, owner disabled), the banned hosts, links disabled or enabled by code; every form is Post/Redirect/Get.
import { Elysia } from 'elysia'
import type { OpenReport } from '../abuse'
import { AppError } from '../kernel/errors'
import { escapeHtml, timeHtml } from '../web/render'
import { REPORTS, tabs } from './admin-tabs'
import type { DashboardDeps } from './deps'
import { byAccount } from '../audit'
import type { Session } from './sessions'

const e = escapeHtml
const ACTIONS: [string, string][] = [
  ['dismissed', 'Dismiss: nothing wrong'],
  ['link_disabled', 'Disable this link'],
  ['host_banned', "Ban the destination's host"],
  ['account_disabled', "Disable the owner's account"],
]
const REASON_WORDS: Record<string, string> = {
  phishing: 'Phishing',
  malware: 'Malware',
  spam: 'Spam',
  illegal: 'Illegal content',
  other: 'Something else',
}

function hostOf(url: string | null): string | null {
  if (!url) return null
  try {
    return new URL(url).hostname
  } catch {
    return null
  }
}

export function createAbuseSection(deps: DashboardDeps) {
  const { shell, abuse, accounts, clientIp } = deps
  const by = (request: Request, s: Session) => byAccount(s.caller, clientIp(request))

  function reportRow(s: Session, r: OpenReport): string {
    const gone = r.long_url === null
    const link = gone
      ? `<s>${e(r.code)}</s> <span class="muted">(deleted)</span>`
      : `<a href="/${encodeURIComponent(r.code)}+">${e(r.code)}</a>`
    const state = r.link_disabled !== null ? ' <span class="badge warn">disabled</span>' : ''
    // Nothing is chosen until the admin chooses (issue 38): a slip of Enter neither dismisses nor disables anything.
    const options = `<option value="" selected>Choose what to do…</option>${ACTIONS.map(([v, label]) => `<option value="${v}">${e(label)}</option>`).join('')}`
    // data-label: on a phone each row is a card of labelled cells (table.stack), nothing cut or scrolled.
    return `<tr>
<td data-label="Reported">${timeHtml(r.created)}</td>
<td data-label="Link"><span>${link}${state}</span></td>
<td class="dest-cell wide" data-label="Destination">${gone ? '' : `<span class="report-dest" title="${e(r.long_url!)}">${e(r.long_url!)}</span>`}</td>
<td data-label="Owner"><span>${r.owner ? e(r.owner) : '<span class="muted">anonymous</span>'}</span></td>
<td class="n" data-label="Clicks"><span>${r.clicks ?? ''}</span></td>
<td class="wide" data-label="Report"><strong>${e(REASON_WORDS[r.reason] ?? r.reason)}</strong>${r.text ? `<p class="report-text">${e(r.text)}</p>` : ''}${r.contact ? `<p class="muted">Contact: ${e(r.contact)}</p>` : ''}</td>
<td class="wide"><form method="post" action="${REPORTS}/${r.id}" class="inline-form report-close">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
<label for="action-${r.id}">What to do about report ${r.id}</label>
<select id="action-${r.id}" name="action" required>${options}</select>
<button type="submit" class="secondary">Close report</button>
</form></td>
</tr>`
  }

  async function page(request: Request, s: Session): Promise<Response> {
    const [reports, bans] = await Promise.all([abuse.openReports(), abuse.bans()])
    const list = abuse.blocklist()
    const csrf = `<input type="hidden" name="_csrf" value="${e(s.csrf)}">`
    const reportsCard = `<section class="card" aria-labelledby="reports-h">
<h2 id="reports-h">Open reports <span class="count">${reports.length}</span></h2>
${
  reports.length === 0
    ? '<p class="empty">No open reports. Visitors report a link from its preview, password or statistics page.</p>'
    : `<div class="table-wrap"><table class="reports stack"><caption class="visually-hidden">Open reports, newest first</caption>
<thead><tr><th scope="col">Reported</th><th scope="col">Link</th><th scope="col">Destination</th><th scope="col">Owner</th><th scope="col">Clicks</th><th scope="col">Report</th><th scope="col">Action</th></tr></thead>
<tbody>${reports.map((r) => reportRow(s, r)).join('')}</tbody></table></div>`
}
</section>`
    const bansCard = `<section class="card" aria-labelledby="bans-h">
<h2 id="bans-h">Banned hosts <span class="count">${bans.length}</span></h2>
<p class="muted">Links to a banned host, or to any of its subdomains, answer visitors with a page saying so (451), and new ones are refused.</p>
<form method="post" action="${REPORTS}/bans" class="form-grid">
${csrf}
<div class="field"><label for="ban-host">Host</label><input id="ban-host" name="host" required maxlength="253" spellcheck="false" autocomplete="off" placeholder="phish.example"></div>
<div class="field"><label for="ban-reason">Reason <span class="optional">(optional, shown to visitors)</span></label><input id="ban-reason" name="reason" maxlength="300" autocomplete="off"></div>
<p class="actions"><button type="submit">Ban the host</button></p>
</form>
${
  bans.length === 0
    ? '<p class="empty">No host is banned.</p>'
    : `<ul class="bans">${bans
        .map(
          (
            b,
          ) => `<li><code>${e(b.host)}</code>${b.reason ? ` — ${e(b.reason)}` : ''} <span class="muted">since ${timeHtml(b.created)}</span>
<form method="post" action="${REPORTS}/bans/remove" class="inline-form">${csrf}<input type="hidden" name="host" value="${e(b.host)}"><button type="submit" class="secondary">Lift the ban on ${e(b.host)}</button></form></li>`,
        )
        .join('')}</ul>`
}
</section>`
    const linkCard = `<section class="card" aria-labelledby="link-h">
<h2 id="link-h">Disable or enable a link</h2>
<form method="post" action="${REPORTS}/link" class="form-grid">
${csrf}
<div class="field"><label for="link-code">Short code</label><input id="link-code" name="code" required maxlength="32" spellcheck="false" autocomplete="off"></div>
<div class="field"><label for="link-reason">Reason <span class="optional">(shown to visitors)</span></label><input id="link-reason" name="reason" maxlength="300" autocomplete="off"></div>
<p class="actions"><button type="submit" name="do" value="disable">Disable</button> <button type="submit" name="do" value="enable" class="secondary">Enable</button></p>
</form>
</section>`
    const lists = `<section class="card" aria-labelledby="lists-h">
<h2 id="lists-h">Blocklists</h2>
${
  list.files.length === 0
    ? '<p class="empty">No blocklist files (<code>links.blocklist_files</code>).</p>'
    : `<ul>${list.files.map((f) => `<li><code>${e(f.path)}</code>: ${f.error ? `<strong>not readable (${e(f.error)})</strong>` : `${f.hosts} hosts${f.skipped ? `, ${f.skipped} line${f.skipped === 1 ? '' : 's'} skipped (not hosts: see the log)` : ''}`}</li>`).join('')}</ul><p class="muted">${list.set.size} distinct hosts, loaded ${timeHtml(list.loadedAt)}; read again on SIGHUP.</p>`
}
</section>`
    const content = `<h1>Admin</h1>\n${tabs('reports')}\n${reportsCard}\n${bansCard}\n${linkCard}\n${lists}`
    return shell.render(request, s, { section: 'admin', title: 'Admin · Reports and bans', content })
  }

  const back = (text: string, kind: 'ok' | 'error' = 'ok') => shell.seeOther(REPORTS, { kind, text })

  return new Elysia({ name: 'dashboard-abuse' })
    .get(REPORTS, async ({ request }) => {
      const s = await shell.requireAdmin(request)
      if (s instanceof Response) return s
      return page(request, s)
    })
    .post(`${REPORTS}/bans`, async ({ request }) => {
      const s = await shell.requireAdmin(request, REPORTS)
      if (s instanceof Response) return s
      const f = await shell.form(request, s)
      try {
        const { host, added } = await abuse.banHost(
          f.get('host') ?? '',
          f.get('reason') ?? '',
          s.accountId,
          by(request, s),
        )
        return back(
          added ? `${host} is banned: its links answer 451, and new ones are refused.` : `${host} was banned already.`,
        )
      } catch (err) {
        if (err instanceof AppError && err.status < 500) return back(err.message, 'error')
        throw err
      }
    })
    .post(`${REPORTS}/bans/remove`, async ({ request }) => {
      const s = await shell.requireAdmin(request, REPORTS)
      if (s instanceof Response) return s
      const host = (await shell.form(request, s)).get('host') ?? ''
      return (await abuse.unbanHost(host, by(request, s)))
        ? back(`The ban on ${host} is lifted: its links work again.`)
        : back(`${host} was not banned.`, 'error')
    })
    .post(`${REPORTS}/link`, async ({ request }) => {
      const s = await shell.requireAdmin(request, REPORTS)
      if (s instanceof Response) return s
      const f = await shell.form(request, s)
      const code = (f.get('code') ?? '').trim()
      const disable = f.get('do') !== 'enable'
      try {
        await abuse.setLinkDisabled(code, disable ? (f.get('reason') ?? '') : null, by(request, s))
        return back(
          disable
            ? `${code} is disabled: visitors get a page saying so; its clicks stay.`
            : `${code} is enabled again.`,
        )
      } catch (err) {
        if (err instanceof AppError && err.status < 500) return back(err.message, 'error')
        throw err
      }
    })
    .post(`${REPORTS}/:id`, async ({ request, params }) => {
      const s = await shell.requireAdmin(request, REPORTS)
      if (s instanceof Response) return s
      const f = await shell.form(request, s)
      const id = /^[1-9][0-9]{0,15}$/.test(params.id) ? Number(params.id) : 0
      const report = id ? await abuse.openReport(id) : null
      if (!report) return back('That report is closed already, or there is no such report.', 'error')
      const action = f.get('action') ?? ''
      if (action === '') return back(`Choose what to do about report ${id}: nothing was done yet.`, 'error')
      const why = `Reported as ${REASON_WORDS[report.reason]?.toLowerCase() ?? report.reason} and checked by the administrator.`
      const who = by(request, s)
      if (action === 'account_disabled' && report.owner === s.accountName)
        return back('You cannot disable your own account here.', 'error')
      let done: string
      try {
        // The change and the report's closing, with their audit rows, in one transaction: both or neither.
        const close = (what: Parameters<typeof abuse.closeReport>[4]) =>
          abuse.closeReport(id, action as 'dismissed', s.accountId, who, what)
        if (action === 'link_disabled' && report.long_url !== null) {
          await close({ disableLink: { code: report.code, reason: why } })
          done = `${report.code} is disabled.`
        } else if (action === 'host_banned' && hostOf(report.long_url)) {
          // The destination's host, a name or an address (banHost takes either, in any spelling).
          done = `${(await close({ ban: { host: hostOf(report.long_url)!, reason: why } })).host} is banned.`
        } else if (action === 'account_disabled' && report.owner) {
          const owner = report.owner
          // In the close's transaction: a refusal (the last active administrator) undoes the close too.
          await close({ change: (tx) => accounts.disableWithin(tx, owner, who) })
          done = `${owner} is disabled: its links answer 451 and its keys are refused.`
        } else if (action === 'dismissed') {
          await close({})
          done = 'Dismissed.'
        } else
          throw new AppError(
            400,
            'invalid_parameter',
            'That action does not fit this report (its link or owner is gone): choose another.',
          )
      } catch (err) {
        if (err instanceof AppError && err.status < 500) return back(err.message, 'error')
        throw err
      }
      return back(`Report ${id} closed. ${done}`)
    })
}
