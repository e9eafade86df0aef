// Admin › Links (issue 38): every link of the service, whoever owns it (or nobody), searchable, sortable, narrowed to
// the anonymous, disabled or reported ones, a page at a time; each disabled or enabled from its row (Post/Redirect/Get,
// checked again in the write: a link changed meanwhile is left as it is), with its audit row as on the Reports page.
import { Elysia } from 'elysia'
import { byAccount } from '../audit'
import { LINK_LIST_SHOWS, LINK_LIST_SORTS, type LinkListShow, type LinkListSort, type ListedLink } from '../abuse'
import { escapeHtml as e, formatCount, timeHtml } from '../web/render'
import { LINKS, REPORTS, tabs } from './admin-tabs'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'

const PER_PAGE = 50
const MAX_PAGE = 100_000
const MAX_SEARCH = 200
const SORT_WORDS: Record<LinkListSort, string> = {
  newest: 'Newest first',
  oldest: 'Oldest first',
  clicks: 'Most clicks',
  code: 'Code, A to Z',
  owner: 'Owner, A to Z',
}
const SHOW_WORDS: Record<LinkListShow, string> = {
  all: 'All links',
  anonymous: 'Anonymous only',
  disabled: 'Disabled only',
  reported: 'Reported only',
}

export interface AdminListQuery {
  q: string
  sort: LinkListSort
  show: LinkListShow
  page: number
}

/** The list's query from a URL's (or a form's) parameters, bounded; a value not understood means the default. */
export function adminListQuery(p: URLSearchParams): AdminListQuery {
  const q = [...(p.get('q') ?? '').trim()].slice(0, MAX_SEARCH).join('')
  const sort = (LINK_LIST_SORTS as readonly string[]).includes(p.get('sort') ?? '')
    ? (p.get('sort') as LinkListSort)
    : 'newest'
  const show = (LINK_LIST_SHOWS as readonly string[]).includes(p.get('show') ?? '')
    ? (p.get('show') as LinkListShow)
    : 'all'
  const n = /^\d{1,6}$/.test(p.get('page') ?? '') ? Number(p.get('page')) : 1
  return { q, sort, show, page: Math.min(Math.max(1, n), MAX_PAGE) }
}

/** This list's path with a query (defaults left out). */
export function adminListHref(q: Partial<AdminListQuery>): string {
  const params = new URLSearchParams()
  if (q.q) params.set('q', q.q)
  if (q.show && q.show !== 'all') params.set('show', q.show)
  if (q.sort && q.sort !== 'newest') params.set('sort', q.sort)
  if (q.page && q.page > 1) params.set('page', String(q.page))
  const s = params.toString()
  return s ? `${LINKS}?${s}` : LINKS
}

const options = <T extends string>(words: Record<T, string>, chosen: T) =>
  (Object.keys(words) as T[])
    .map((k) => `<option value="${k}"${k === chosen ? ' selected' : ''}>${e(words[k])}</option>`)
    .join('')

function tools(query: AdminListQuery): string {
  return `<form method="get" action="${LINKS}" role="search" class="form-grid admin-links-tools">
<div class="field"><label for="al-q">Search</label><input id="al-q" name="q" type="search" maxlength="${MAX_SEARCH}" value="${e(query.q)}" aria-describedby="al-q-hint"><span class="hint" id="al-q-hint">Part of a code, a destination or an owner's name.</span></div>
<div class="field"><label for="al-show">Show</label><select id="al-show" name="show">${options(SHOW_WORDS, query.show)}</select></div>
<div class="field"><label for="al-sort">Order</label><select id="al-sort" name="sort">${options(SORT_WORDS, query.sort)}</select></div>
<p class="actions"><button type="submit" class="secondary">Show links</button>${query.q || query.show !== 'all' ? ` <a href="${LINKS}">Clear</a>` : ''}</p>
</form>`
}

function row(s: Session, l: ListedLink, query: AdminListQuery): string {
  const code = e(l.code)
  const owner = l.owner === null ? '<span class="muted">anonymous</span>' : e(l.owner)
  const state =
    l.disabled === null
      ? '<span class="badge on">Active</span>'
      : `<span class="badge off">Disabled</span><span class="disabled-why">${e(l.disabled)}</span>`
  const reports = l.reports
    ? ` <a class="badge warn" href="${REPORTS}">${l.reports} open report${l.reports === 1 ? '' : 's'}</a>`
    : ''
  const back = `<input type="hidden" name="back" value="${e(adminListHref(query))}">`
  const button =
    l.disabled === null
      ? `<button type="submit" name="do" value="disable" class="warn-button secondary small">Disable<span class="visually-hidden"> ${code}</span></button>`
      : `<button type="submit" name="do" value="enable" class="secondary small">Enable<span class="visually-hidden"> ${code}</span></button>`
  return `<tr>
<td data-label="Link"><a href="/${encodeURIComponent(l.code)}+"><code>${code}</code></a></td>
<td class="wide al-dest" data-label="Destination"><span>${e(l.long_url)}</span></td>
<td data-label="Owner"><span>${owner}</span></td>
<td class="date" data-label="Created">${timeHtml(l.created)}</td>
<td class="n" data-label="Clicks"><span>${formatCount(l.clicks)}</span></td>
<td data-label="State"><span>${state}${reports}</span></td>
<td class="wide" data-label="Action"><form method="post" action="${LINKS}/${l.id}" class="inline-form"><input type="hidden" name="_csrf" value="${e(s.csrf)}"><input type="hidden" name="code" value="${code}">${back}${button}</form></td>
</tr>`
}

function listCard(s: Session, list: { total: number; links: ListedLink[] }, query: AdminListQuery): string {
  const narrowed = query.q || query.show !== 'all'
  const head = `<h2 id="al-h">All links <span class="count">${formatCount(list.total)}</span></h2>`
  if (list.links.length === 0) {
    const empty = narrowed
      ? `<p class="empty">No link ${query.q ? `matches “${e(query.q)}”` : 'is'}${query.show !== 'all' ? ` among the ${query.show} ones` : ''}. <a href="${LINKS}">Show all links</a></p>`
      : list.total
        ? `<p class="empty">No links on this page. <a href="${LINKS}">Go to the first page</a></p>`
        : '<p class="empty">No links yet: the links people make, signed in or anonymously, are listed here.</p>'
    return `<section class="card" aria-labelledby="al-h">${head}${tools(query)}${empty}</section>`
  }
  const from = (query.page - 1) * PER_PAGE + 1
  const range = `${formatCount(from)}–${formatCount(from + list.links.length - 1)} of ${formatCount(list.total)}`
  const pages = Math.ceil(list.total / PER_PAGE)
  const prev =
    query.page > 1
      ? `<a href="${e(adminListHref({ ...query, page: query.page - 1 }))}" rel="prev">← Previous</a>`
      : '<span></span>'
  const next =
    query.page < pages
      ? `<a href="${e(adminListHref({ ...query, page: query.page + 1 }))}" rel="next">Next →</a>`
      : '<span></span>'
  return `<section class="card" aria-labelledby="al-h">${head}${tools(query)}
<div class="table-wrap"><table class="admin-links stack">
<caption class="visually-hidden">${e(SHOW_WORDS[query.show])}${query.q ? `, matching “${e(query.q)}”` : ''}, ${e(SORT_WORDS[query.sort].toLowerCase())}: ${range}</caption>
<thead><tr><th scope="col">Link</th><th scope="col">Destination</th><th scope="col">Owner</th><th scope="col">Created</th><th scope="col" class="n">Clicks</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${list.links.map((l) => row(s, l, query)).join('')}</tbody></table></div>
<nav class="pager" aria-label="Pages of links">${prev}<span class="muted">${range}</span>${next}</nav>
</section>`
}

export function createAdminLinksPage(deps: DashboardDeps) {
  const { shell, abuse, clientIp } = deps

  return new Elysia({ name: 'dashboard-admin-links' })
    .get(LINKS, async ({ request }) => {
      const s = await shell.requireAdmin(request)
      if (s instanceof Response) return s
      const query = adminListQuery(new URL(request.url).searchParams)
      const list = await abuse.listLinks({
        search: query.q,
        sort: query.sort,
        show: query.show,
        offset: (query.page - 1) * PER_PAGE,
        limit: PER_PAGE,
      })
      const content = `<h1>Admin</h1>\n${tabs('links')}\n${listCard(s, list, query)}`
      return shell.render(request, s, { section: 'admin', title: 'Admin · Links', content })
    })
    .post(`${LINKS}/:id`, async ({ request, params }) => {
      const s = await shell.requireAdmin(request, LINKS)
      if (s instanceof Response) return s
      const f = await shell.form(request, s)
      // Back to the list as it was (rebuilt from its parsed query: nothing sent goes into the Location as is).
      const backTo = adminListHref(adminListQuery(new URLSearchParams((f.get('back') ?? '').split('?')[1] ?? '')))
      const id = /^[1-9][0-9]{0,15}$/.test(params.id) ? Number(params.id) : 0
      const disable = f.get('do') === 'disable'
      const code = (f.get('code') ?? '').slice(0, 64)
      const done = id
        ? await abuse.setListedLinkDisabled(id, disable ? '' : null, byAccount(s.caller, clientIp(request)))
        : null
      if (!done)
        return shell.seeOther(backTo, {
          kind: 'error',
          text: `${code || 'That link'} was changed or deleted meanwhile, so nothing was done: the list shows it as it is now.`,
        })
      return shell.seeOther(backTo, {
        kind: 'ok',
        text: disable
          ? `${done.code} is disabled: visitors get a page saying so; its clicks stay.`
          : `${done.code} is enabled again.`,
      })
    })
}
