// The Links section's list: its query in the URL, the search and sort tools, the rows and their cells (no I/O).
import { breakable, type LinkOrder, type LinkRecord, MAX_FILTER_TAGS, MAX_SEARCH_LENGTH } from '../links'
import { escapeHtml as e, isoTimeHtml } from '../web/render'
import type { DashboardDeps } from './deps'

/** A code in a dashboard path: the alphabet of generated codes and aliases (validated before any look-up). */
export const CODE = /^[A-Za-z0-9_-]{1,64}$/
/** A link as the dashboard's paths name it: its code, and "@host" for a link on another short domain (SPEC §13). */
export const REF = /^([A-Za-z0-9_-]{1,64})(?:@([a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?))?$/
/** The dashboard's name of a record (`home`: the default domain's host, whose links go by their code alone). */
export const refOf = (r: { hex: string; domain: string }, home: string) =>
  r.domain === home ? r.hex : `${r.hex}@${r.domain}`
/** The code and domain ('' the default) a dashboard name stands for; null when it is none. */
export function parseRef(ref: string): { code: string; domain: string } | null {
  const m = REF.exec(ref)
  return m ? { code: m[1]!, domain: m[2] ?? '' } : null
}
export const DEST_SHOWN = 64

/** A tag in the list's URL (?tag=): the alphabet of tags; anything else means no filter. */
export const TAG = /^[A-Za-z0-9_-]{1,32}$/

/** A destination as a table shows it: at most DEST_SHOWN characters, without the scheme. */
export function shortDestination(url: string): string {
  const bare = url.replace(/^https?:\/\//i, '')
  return [...bare].length > DEST_SHOWN ? [...bare].slice(0, DEST_SHOWN - 1).join('') + '…' : bare
}

export const LOCK_SVG =
  '<svg class="lock" viewBox="0 0 16 16" width="14" height="14" aria-hidden="true" focusable="false"><path fill="currentColor" d="M4.5 7V5a3.5 3.5 0 0 1 7 0v2h.5A1 1 0 0 1 13 8v6a1 1 0 0 1-1 1H4a1 1 0 0 1-1-1V8a1 1 0 0 1 1-1zm1.5 0h4V5a2 2 0 0 0-4 0z"/></svg>'
export const lock = (has: boolean) =>
  has
    ? `<span class="lock-badge" title="Protected by a password">${LOCK_SVG}<span class="visually-hidden">Password protected</span></span>`
    : ''

export const day = (iso: string) => iso.slice(0, 10)
export const time = (iso: string) => isoTimeHtml(iso, { split: true })

export function expiryCell(r: LinkRecord): string {
  // Disabled by an administrator (issue 26): visitors get a 451 page; the reason is the owner's to read.
  if (r.disabled !== null)
    return `<span class="tag off" title="${e(r.disabled)}">disabled</span> <span class="disabled-why">${e(r.disabled)}</span>`
  if (!r.expires) return '<span class="muted">never</span>'
  if (r.expired) return `<span class="tag expired">expired</span> ${time(r.expires)}`
  return time(r.expires)
}

/** The list's orders (?sort=; 'created', newest first, is the default) with their words and storage order. */
export const SORTS = {
  created: { text: 'Newest', order: 'created-desc', caption: 'newest first' },
  oldest: { text: 'Oldest', order: 'created-asc', caption: 'oldest first' },
  clicks: { text: 'Most clicks', order: 'clicks-desc', caption: 'most clicks first' },
  'fewest-clicks': { text: 'Fewest clicks', order: 'clicks-asc', caption: 'fewest clicks first' },
  code: { text: 'Code A–Z', order: 'code-asc', caption: 'by code, A to Z' },
  'code-desc': { text: 'Code Z–A', order: 'code-desc', caption: 'by code, Z to A' },
  destination: { text: 'Destination A–Z', order: 'destination-asc', caption: 'by destination, A to Z' },
  'destination-desc': { text: 'Destination Z–A', order: 'destination-desc', caption: 'by destination, Z to A' },
} as const satisfies Record<string, { text: string; order: LinkOrder; caption: string }>
export type SortName = keyof typeof SORTS

export interface ListQuery {
  q: string
  /** Only links with every one of these tags (none: all); ?tag= given once per tag. */
  tags: string[]
  sort: SortName
  page: number
  /** Only one short domain's links (its host; '': every domain's). */
  domain: string
}

/** The list's query from the URL, bounded and cleaned (never an error: a bad value means the default). */
export function listQuery(url: URL, hosts: readonly string[] = []): ListQuery {
  const q = [...(url.searchParams.get('q') ?? '').trim()].slice(0, MAX_SEARCH_LENGTH).join('')
  const s = url.searchParams.get('sort') ?? ''
  const sort: SortName = Object.hasOwn(SORTS, s) ? (s as SortName) : 'created'
  const p = url.searchParams.get('page') ?? ''
  const page = /^\d{1,6}$/.test(p) ? Math.max(1, Number(p)) : 1
  const given = url.searchParams.getAll('tag').filter((t) => TAG.test(t))
  const tags = [...new Set(given.map((t) => t.toLowerCase()))].slice(0, MAX_FILTER_TAGS)
  const d = (url.searchParams.get('domain') ?? '').toLowerCase()
  // Only one of the service's domains filters; any other value means every domain (never an error).
  const domain = hosts.includes(d) ? d : ''
  return { q, tags, sort, page, domain }
}

/** What the links service's search is asked for this query. */
export const searchInput = (q: ListQuery) => ({
  q: q.q,
  tags: q.tags,
  order: SORTS[q.sort].order,
  page: q.page,
  ...(q.domain ? { domain: q.domain } : {}),
})

/** The list's query as URL parameters (defaults left out). */
export function listParams(q: Partial<ListQuery>): URLSearchParams {
  const params = new URLSearchParams()
  if (q.q) params.set('q', q.q)
  for (const t of q.tags ?? []) params.append('tag', t)
  if (q.sort && q.sort !== 'created') params.set('sort', q.sort)
  if (q.page && q.page > 1) params.set('page', String(q.page))
  if (q.domain) params.set('domain', q.domain)
  return params
}

/** /dashboard with the list's query (defaults left out), escaped for an attribute by the caller. */
export function listHref(q: Partial<ListQuery>): string {
  const s = listParams(q).toString()
  return s ? `/dashboard?${s}` : '/dashboard'
}

/** "3 of 10 visits left" (or "" for a link without a limit). */
export const visitsLeftText = (r: LinkRecord) =>
  r.max_visits === null ? '' : `${r.visits_left} of ${r.max_visits} ${r.max_visits === 1 ? 'visit' : 'visits'} left`

/** A link's tags as chips, each a link adding its tag to the list's filter. */
export function tagChips(r: LinkRecord, current: ListQuery): string {
  if (r.tags.length === 0) return ''
  const chips = r.tags.map((t) => {
    const on = current.tags.includes(t)
    const href = listHref({ ...current, tags: on ? current.tags : [...current.tags, t], page: 1 })
    return `<li><a class="tag-chip" href="${e(href)}"${on ? ' aria-current="true"' : ''}><span class="visually-hidden">Links tagged </span>${e(t)}</a></li>`
  })
  return `<ul class="tag-chips" aria-label="Tags of ${e(r.hex)}">${chips.join('')}</ul>`
}

/** The tags the list is filtered by, each a chip that takes it off the filter (AND: every one must be there). */
function tagFilter(query: ListQuery): string {
  const { q, tags, sort, domain } = query
  if (tags.length === 0) return ''
  const chips = tags.map(
    (t) =>
      `<a class="tag-chip current" href="${e(listHref({ q, sort, domain, tags: tags.filter((x) => x !== t) }))}">${e(t)}<span class="visually-hidden"> (take off the filter)</span> <span aria-hidden="true">×</span></a>`,
  )
  const all = tags.length > 1 ? ' <span class="muted">— links with all of these tags</span>' : ''
  return `<p class="tag-filter">Tagged ${chips.join(' and ')}${all} <a href="${e(listHref({ q, sort, domain }))}">Show all tags</a></p>`
}

/** The search form's domain picker, when the service has several short domains (SPEC §13). */
function domainFilter(hosts: readonly string[], chosen: string): string {
  if (hosts.length < 2) return ''
  const options = [['', 'All domains'] as const, ...hosts.map((h) => [h, h] as const)]
  return `<label for="domain-filter" class="visually-hidden">Domain</label><select id="domain-filter" name="domain">${options
    .map(([v, label]) => `<option value="${e(v)}"${v === chosen ? ' selected' : ''}>${e(label)}</option>`)
    .join('')}</select>`
}

/** "rules" and "A/B" badges for a link whose visitors may go elsewhere than its URL. */
export function routingBadges(r: LinkRecord): string {
  const badge = (text: string, title: string) => ` <span class="tag routing" title="${title}">${text}</span>`
  return (
    (r.rules ? badge('rules', `${r.rules.length} redirect ${r.rules.length === 1 ? 'rule' : 'rules'}`) : '') +
    (r.split ? badge('A/B', `Split over ${r.split.length} destinations`) : '')
  )
}

export function row(r: LinkRecord, fresh: boolean, query: ListQuery, home: string): string {
  const c = refOf(r, home)
  const label = `<span class="visually-hidden"> ${e(c)}</span>`
  // Each cell's content is one element: on a phone a cell is a two-column grid of its label and that.
  // The checkbox belongs to the bulk bar's form (form="bulk-form"): it works without the script.
  return `<tr${fresh ? ' class="fresh"' : ''}>
<td class="pick" data-label="Select"><input type="checkbox" name="code" value="${e(c)}" form="bulk-form" aria-label="Select ${e(c)}"></td>
<td class="link-cell" data-label="Link">${r.title ? `<div class="link-title">${e(r.title)}</div>` : ''}<div class="short-line"><a class="short" id="short-${e(c)}" href="${e(r.url)}">${e(r.url)}</a>${lock(r.password)}${routingBadges(r)}<button type="button" class="copy secondary small" data-copy="short-${e(c)}" aria-label="Copy ${e(r.url)}" hidden>Copy</button></div>
<div class="dest-line"><span class="dest-text" title="${e(r.long_url)}">→&nbsp;${breakable(shortDestination(r.long_url))}</span><input type="hidden" id="dest-${e(c)}" value="${e(r.long_url)}"><button type="button" class="copy link small" data-copy="dest-${e(c)}" aria-label="Copy the whole destination of ${e(c)}" hidden>Copy</button></div>${tagChips(r, query)}${r.max_visits !== null ? `<div class="visits-left${r.visits_left === 0 ? ' used-up' : ''}">${e(visitsLeftText(r))}</div>` : ''}</td>
<td data-label="Mode"><span>${e(r.mode)}</span></td>
<td class="n" data-label="Clicks"><span>${r.clicks}</span></td>
<td class="date" data-label="Created">${time(r.created)}</td>
<td class="date" data-label="Expires"><span>${expiryCell(r)}</span></td>
<td class="row-actions" data-label="Actions"><span><a href="/dashboard/links/${e(c)}/stats">Stats${label}</a> <a href="${r.domain === home ? `/qr/${e(c)}.png` : e(r.qr)}" target="_blank" rel="noopener">QR<span class="visually-hidden"> ${e(c)} (opens in a new tab)</span></a> <a href="/dashboard/links/${e(c)}">Edit${label}</a> <a class="danger-link" href="/dashboard/links/${e(c)}/delete">Delete${label}</a></span></td>
</tr>`
}

export function listCard(
  result: Awaited<ReturnType<DashboardDeps['links']['search']>>,
  query: ListQuery,
  fresh: string | null,
  /** The bulk bar (links-bulk.ts), above the table. */
  bulk = '',
  /** The default domain's host (refOf) and every short domain's (a filter when there are several). */
  site: { home: string; hosts: readonly string[] } = { home: '', hosts: [] },
): string {
  const { home, hosts } = site
  const { q, tags, sort, domain } = query
  const sortLink = (value: SortName) =>
    `<a href="${e(listHref({ q, tags, sort: value, domain }))}"${sort === value ? ' aria-current="true"' : ''}>${SORTS[value].text}</a>`
  // The search box is id="search" (the "/" shortcut focuses it); a tag filter stays on while searching.
  const search = `<div class="list-tools">
<form method="get" action="/dashboard" role="search" class="link-search">
<label for="search" class="visually-hidden">Search your links</label>
<input id="search" name="q" type="search" maxlength="${MAX_SEARCH_LENGTH}" placeholder="Search code, destination, title or tag" value="${e(q)}">
${domainFilter(hosts, domain)}${tags.map((t) => `<input type="hidden" name="tag" value="${e(t)}">`).join('')}${sort !== 'created' ? `<input type="hidden" name="sort" value="${e(sort)}">` : ''}<button type="submit" class="secondary">Search</button>
${q || domain ? `<a href="${e(listHref({ tags, sort }))}">Clear</a>` : ''}
</form>
<nav class="sort" aria-label="Sort links"><span class="muted">Sort:</span> ${(Object.keys(SORTS) as SortName[]).map(sortLink).join(' ')}</nav>
<a class="manage-tags" href="/dashboard/tags">Tags</a>
<a class="button secondary small export-link" href="/dashboard/links.csv" download>Export CSV<span class="visually-hidden"> of all your links</span></a>
<a class="button secondary small import-link" href="/dashboard/import">Import<span class="visually-hidden"> links from a file</span></a>
</div>${tagFilter(query)}`
  if (result.total === 0) {
    const tagged = tags.map((t) => `“${e(t)}”`).join(' and ')
    const matching = [
      q ? `matches “${e(q)}”` : '',
      tagged ? `is tagged ${tagged}` : '',
      domain ? `is on ${e(domain)}` : '',
    ]
      .filter(Boolean)
      .join(' and ')
    const empty = matching
      ? `<div class="empty"><p>No link ${matching}.</p><p><a href="${e(listHref({ sort }))}">Show all your links</a></p></div>`
      : `<div class="empty"><p><strong>No links yet.</strong></p><p>Paste a long address in the form above to make your first short link, or create links from scripts with an <a href="/dashboard/keys">API key</a>. Coming from Shlink, Kutt, YOURLS or Bitly? <a href="/dashboard/import">Import your links</a>.</p></div>`
    return `<section class="card" aria-labelledby="list-heading"><h2 id="list-heading">Your links</h2>${matching ? search : ''}${empty}</section>`
  }
  const from = result.offset + 1
  const to = result.offset + result.links.length
  const range = `${from}–${to} of ${result.total}${result.capped ? '+' : ''}`
  const prev =
    result.page > 1
      ? `<a href="${e(listHref({ q, tags, sort, domain, page: result.page - 1 }))}" rel="prev">← Previous</a>`
      : '<span></span>'
  const next =
    result.page < result.pages
      ? `<a href="${e(listHref({ q, tags, sort, domain, page: result.page + 1 }))}" rel="next">Next →</a>`
      : '<span></span>'
  return `<section class="card" aria-labelledby="list-heading">
<h2 id="list-heading">Your links <span class="count">${result.capped ? `${result.total}+` : result.total}</span></h2>
${result.pages > 1 ? '<a class="skip-pages" href="#pager">Skip to pages</a>\n' : ''}${search}
${bulk}
<div class="table-wrap">
<table class="links-table">
<caption class="visually-hidden">Your links${q ? `, matching “${e(q)}”` : ''}${tags.length ? `, tagged ${tags.map((t) => `“${e(t)}”`).join(' and ')}` : ''}, ${SORTS[sort].caption}: ${range}</caption>
<thead><tr><th scope="col" class="pick"><span class="visually-hidden">Select</span><input type="checkbox" id="pick-all" aria-label="Select all links on this page" hidden></th><th scope="col">Link</th><th scope="col">Mode</th><th scope="col" class="n">Clicks</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Actions</th></tr></thead>
<tbody>
${result.links.map((r) => row(r, refOf(r, home) === fresh, query, home)).join('\n')}
</tbody>
</table>
</div>
<nav class="pager" id="pager" tabindex="-1" aria-label="Pages">${prev}<span class="range">${range}</span>${next}</nav>
</section>`
}
