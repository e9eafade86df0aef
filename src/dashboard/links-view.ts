// The Links section's views: the list, its query, the create and edit forms' fields and their errors (no I/O).
import type { AppError } from '../kernel/errors'
import {
  breakable,
  MAX_JSON_CHARS,
  MAX_RULES,
  MAX_SEARCH_LENGTH,
  MAX_SPLIT,
  MAX_TAG_LENGTH,
  MAX_TAGS,
  MAX_TITLE_LENGTH,
  MAX_VISITS,
  MIN_SPLIT,
  MODES,
  type LinkRecord,
  type LinkSort,
} from '../links'
import { escapeHtml as e } from '../web/render'
import type { FormTokens } from './form-tokens'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'
import { when } from './page-helpers'

/** The lifetimes offered for a link (seconds; '' is "never"). */
export const LIFETIMES: readonly (readonly [string, string])[] = [
  ['', 'Never'],
  ['3600', '1 hour'],
  ['86400', '1 day'],
  ['604800', '1 week'],
  ['2592000', '30 days'],
  ['31536000', '1 year'],
]
export const MODE_LABELS: Record<string, string> = {
  redirect: 'Redirect',
  preview: 'Preview page first',
  frame: 'Framed, with a top bar',
}
/** A code in a dashboard path: the alphabet of generated codes and aliases (validated before any look-up). */
export const CODE = /^[A-Za-z0-9_-]{1,64}$/
export const DEST_SHOWN = 64

/** Field names as people read them, for the service's messages ("The parameter "url"…" → "The URL…"). */
export const FIELD_NAMES: Record<string, string> = {
  url: 'The URL',
  alias: 'The alias',
  mode: 'The mode',
  expire: 'The expiry',
  password: 'The password',
  tags: 'The tags',
  max_visits: 'The visit limit',
  rules: 'The rules',
  split: 'The split',
  title: 'The title',
}
/** A tag in the list's URL (?tag=): the alphabet of tags; anything else means no filter. */
export const TAG = /^[A-Za-z0-9_-]{1,32}$/
export const TAGS_HINT = `Up to ${MAX_TAGS}, separated by commas: letters, digits, _ or -, at most ${MAX_TAG_LENGTH} each.`
/** The tags field as typed, tidied for the service: empty items (a trailing comma) left out. */
export const tidyTags = (typed: string) =>
  typed
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)
    .join(',')
// A rule's or an arm's own field ("rules[2].url") keeps its path after the area's name: "The rules: rules[2].url must…".
export const humane = (message: string) =>
  message
    .replace(/^The parameter "rules" is\b/, 'The rules are')
    .replace(
      /^The parameter "((rules|split)\[[^"]*)"/,
      (_all, path: string, area: string) => `${FIELD_NAMES[area]}: ${path}`,
    )
    .replace(/^The parameter "(\w+)"/, (all, name: string) => FIELD_NAMES[name] ?? all)

/** Which field of the form an error of the link service is about (null: the form as a whole). */
export function fieldOf(err: AppError): string | null {
  // A rule's or an arm's URL is refused as invalid_url too: it belongs to its text area, not to "url".
  const area = /^The parameter "(rules|split)\b/.exec(err.message)?.[1]
  if (area) return area
  switch (err.code) {
    case 'invalid_url':
      return 'url'
    case 'invalid_alias':
    case 'alias_taken':
    case 'alias_reserved':
      return 'alias'
    case 'invalid_mode':
      return 'mode'
    case 'invalid_expire':
      return 'expire'
  }
  const named = /^The parameter "(\w+)"/.exec(err.message)?.[1]
  return named && named in FIELD_NAMES ? named : null
}

export type FieldErrors = Record<string, string>

/** aria attributes and the message of a field's error (ids: NAME-error). */
export function errorOf(errors: FieldErrors, id: string) {
  const msg = errors[id]
  if (!msg) return { attrs: '', html: '' }
  return {
    attrs: ` aria-invalid="true" aria-describedby="${id}-error"`,
    html: `<span class="error" id="${id}-error">${e(msg)}</span>`,
  }
}

export const selectOptions = (options: readonly (readonly [string, string])[], selected: string) =>
  options
    .map(([v, label]) => `<option value="${e(v)}"${v === selected ? ' selected' : ''}>${e(label)}</option>`)
    .join('')

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
export const time = (iso: string) =>
  `<time datetime="${e(iso)}" title="${e(when(Date.parse(iso)))}">${e(day(iso))}</time>`

export function expiryCell(r: LinkRecord): string {
  // Disabled by an administrator (issue 26): visitors get a 451 page; the reason is the owner's to read.
  if (r.disabled !== null)
    return `<span class="tag off" title="${e(r.disabled)}">disabled</span> <span class="disabled-why">${e(r.disabled)}</span>`
  if (!r.expires) return '<span class="muted">never</span>'
  if (r.expired) return `<span class="tag expired">expired</span> ${time(r.expires)}`
  return time(r.expires)
}

export interface ListQuery {
  q: string
  /** Only links with this tag ('' for all). */
  tag: string
  sort: LinkSort
  page: number
}

/** The list's query from the URL, bounded and cleaned (never an error: a bad value means the default). */
export function listQuery(url: URL): ListQuery {
  const q = [...(url.searchParams.get('q') ?? '').trim()].slice(0, MAX_SEARCH_LENGTH).join('')
  const sort: LinkSort = url.searchParams.get('sort') === 'clicks' ? 'clicks' : 'created'
  const p = url.searchParams.get('page') ?? ''
  const page = /^\d{1,6}$/.test(p) ? Math.max(1, Number(p)) : 1
  const t = url.searchParams.get('tag') ?? ''
  const tag = TAG.test(t) ? t.toLowerCase() : ''
  return { q, tag, sort, page }
}

/** /dashboard with the list's query (defaults left out), escaped for an attribute by the caller. */
export function listHref(q: Partial<ListQuery>): string {
  const params = new URLSearchParams()
  if (q.q) params.set('q', q.q)
  if (q.tag) params.set('tag', q.tag)
  if (q.sort && q.sort !== 'created') params.set('sort', q.sort)
  if (q.page && q.page > 1) params.set('page', String(q.page))
  const s = params.toString()
  return s ? `/dashboard?${s}` : '/dashboard'
}

export interface CreateForm {
  url: string
  alias: string
  mode: string
  expire: string
  tags: string
  max_visits: string
  rules: string
  split: string
  title: string
}
export const EMPTY_FORM: CreateForm = {
  url: '',
  alias: '',
  mode: 'redirect',
  expire: '',
  tags: '',
  max_visits: '',
  rules: '',
  split: '',
  title: '',
}
/** The fields of the limit, rules and split, as both forms send them (and a lost session keeps them). */
export const ROUTING_FIELDS = ['max_visits', 'rules', 'split'] as const

export const RULES_EXAMPLE =
  '[{"device": ["mobile"], "url": "https://m.example.com/"},\n {"country": ["DE", "AT"], "url": "https://example.com/de"}]'
export const SPLIT_EXAMPLE =
  '[{"url": "https://example.com/a", "weight": 50},\n {"url": "https://example.com/b", "weight": 50}]'

/**
 * The visit limit and the two JSON areas of both forms (ids: max_visits, rules, split, each with -hint and
 * -error). `left` is the edit page's "3 of 10 visits left".
 */
export function routingFields(
  v: Pick<CreateForm, 'max_visits' | 'rules' | 'split'>,
  errors: FieldErrors,
  left = '',
): string {
  const described = (id: string) =>
    `aria-describedby="${id}-hint${errors[id] ? ` ${id}-error` : ''}"${errors[id] ? ' aria-invalid="true"' : ''}`
  const area = (
    id: 'rules' | 'split',
    label: string,
    hint: string,
    example: string,
  ) => `<div class="field span-all"><label for="${id}">${label} <span class="optional">(optional)</span></label>
<textarea id="${id}" name="${id}" class="json" rows="3" maxlength="${MAX_JSON_CHARS}" spellcheck="false" autocapitalize="off" autocomplete="off" placeholder="${e(example)}" ${described(id)}>${e(v[id])}</textarea>
<span class="hint" id="${id}-hint">${hint} For example: <code>${e(example)}</code></span>${errorOf(errors, id).html}</div>`
  return `<div class="field"><label for="max_visits">Visit limit <span class="optional">(optional)</span></label>
<input id="max_visits" name="max_visits" type="number" inputmode="numeric" min="0" max="${MAX_VISITS}" step="1" autocomplete="off" value="${e(v.max_visits)}" ${described('max_visits')}>
<span class="hint" id="max_visits-hint">${left ? `${e(left)}. ` : ''}After this many visits by people the link stops (bots and link previews use none). Empty: no limit.</span>${errorOf(errors, 'max_visits').html}</div>
${area('rules', 'Redirect rules', `A JSON list of at most ${MAX_RULES} rules, each a <code>url</code> and one or more of <code>device</code> (desktop, mobile, tablet, other), <code>os</code>, <code>country</code> (two letters) and <code>language</code> (e.g. de); the first rule that matches sends the visitor to its URL. Empty: none.`, RULES_EXAMPLE)}
${area('split', 'A/B split', `A JSON list of ${MIN_SPLIT} to ${MAX_SPLIT} URLs with weights from 1 to 100; visitors no rule sends elsewhere are shared out by weight, each keeping theirs all day. Empty: none.`, SPLIT_EXAMPLE)}`
}

/** "3 of 10 visits left" (or "" for a link without a limit). */
export const visitsLeftText = (r: LinkRecord) =>
  r.max_visits === null ? '' : `${r.visits_left} of ${r.max_visits} ${r.max_visits === 1 ? 'visit' : 'visits'} left`
/** Rules and split as the edit form shows them: the stored JSON, one item a line ('' for none). */
export const jsonArea = (items: readonly unknown[] | undefined) =>
  items?.length ? `[${items.map((i) => JSON.stringify(i)).join(',\n ')}]` : ''

/** A refused form, kept for the page it is sent back to (what was typed, never the password). */
export interface Refused<F> {
  values: F
  errors: FieldErrors
  formError?: string
}

export function createCard(s: Session, tokens: FormTokens, form: CreateForm, errors: FieldErrors): string {
  const url = errorOf(errors, 'url')
  const alias = errorOf(errors, 'alias')
  const mode = errorOf(errors, 'mode')
  const expire = errorOf(errors, 'expire')
  const password = errorOf(errors, 'password')
  const more = !!(
    form.alias ||
    form.mode !== 'redirect' ||
    form.expire ||
    form.tags ||
    form.max_visits ||
    form.rules ||
    form.split ||
    form.title ||
    errors.alias ||
    errors.mode ||
    errors.expire ||
    errors.password ||
    errors.tags ||
    errors.max_visits ||
    errors.rules ||
    errors.split ||
    errors.title
  )
  return `<section class="card link-new" aria-labelledby="new-heading">
<h2 id="new-heading">Shorten a link</h2>
<form method="post" action="/dashboard/links">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
${tokens.field()}
<div class="link-new-row">
<div class="field grow"><label for="url">Long URL</label>
<input id="url" name="url" type="url" inputmode="url" autocomplete="off" required maxlength="4096" placeholder="https://example.com/a/long/address" value="${e(form.url)}"${url.attrs}>${url.html}</div>
<button type="submit">Shorten</button>
</div>
<details class="more"${more ? ' open' : ''}><summary>More options</summary>
<div class="form-grid">
<div class="field"><label for="alias">Alias <span class="optional">(optional)</span></label>
<input id="alias" name="alias" autocomplete="off" maxlength="32" value="${e(form.alias)}" aria-describedby="alias-hint${errors.alias ? ' alias-error' : ''}"${errors.alias ? ' aria-invalid="true"' : ''}>
<span class="hint" id="alias-hint">2–32 letters, digits, _ or -; a random code otherwise.</span>${alias.html}</div>
<div class="field"><label for="mode">Mode</label>
<select id="mode" name="mode"${mode.attrs}>${selectOptions(
    MODES.map((m) => [m, MODE_LABELS[m] ?? m] as const),
    form.mode,
  )}</select>${mode.html}</div>
<div class="field"><label for="expire">Expires after</label>
<select id="expire" name="expire"${expire.attrs}>${selectOptions(LIFETIMES, form.expire)}</select>${expire.html}</div>
<div class="field"><label for="password">Password <span class="optional">(optional)</span></label>
<input id="password" name="password" type="password" autocomplete="new-password" maxlength="128"${password.attrs}>${password.html}</div>
${titleField(form.title, errors)}
${tagsField(form.tags, errors)}
${routingFields(form, errors)}
</div>
</details>
</form>
</section>`
}

/** The title field of both forms (ids: title, title-error). */
export function titleField(value: string, errors: FieldErrors): string {
  const title = errorOf(errors, 'title')
  return `<div class="field"><label for="title">Title <span class="optional">(optional)</span></label>
<input id="title" name="title" autocomplete="off" maxlength="${MAX_TITLE_LENGTH}" value="${e(value)}"${title.attrs}>${title.html}</div>`
}

/** The tags field of both forms (ids: tags, tags-hint, tags-error). */
export function tagsField(value: string, errors: FieldErrors): string {
  return `<div class="field"><label for="tags">Tags <span class="optional">(optional)</span></label>
<input id="tags" name="tags" autocomplete="off" maxlength="400" placeholder="news, spring-sale" value="${e(value)}" aria-describedby="tags-hint${errors.tags ? ' tags-error' : ''}"${errors.tags ? ' aria-invalid="true"' : ''}>
<span class="hint" id="tags-hint">${e(TAGS_HINT)}</span>${errorOf(errors, 'tags').html}</div>`
}

/** A link's tags as chips, each a link to the list of that tag. */
export function tagChips(r: LinkRecord, current: ListQuery): string {
  if (r.tags.length === 0) return ''
  const chips = r.tags.map(
    (t) =>
      `<li><a class="tag-chip" href="${e(listHref({ tag: t, sort: current.sort }))}"${t === current.tag ? ' aria-current="true"' : ''}><span class="visually-hidden">Links tagged </span>${e(t)}</a></li>`,
  )
  return `<ul class="tag-chips" aria-label="Tags of ${e(r.hex)}">${chips.join('')}</ul>`
}

/** "rules" and "A/B" badges for a link whose visitors may go elsewhere than its URL. */
export function routingBadges(r: LinkRecord): string {
  const badge = (text: string, title: string) => ` <span class="tag routing" title="${title}">${text}</span>`
  return (
    (r.rules ? badge('rules', `${r.rules.length} redirect ${r.rules.length === 1 ? 'rule' : 'rules'}`) : '') +
    (r.split ? badge('A/B', `Split over ${r.split.length} destinations`) : '')
  )
}

export function row(r: LinkRecord, fresh: boolean, query: ListQuery): string {
  const c = r.hex
  const label = `<span class="visually-hidden"> ${e(c)}</span>`
  // Each cell's content is one element: on a phone a cell is a two-column grid of its label and that.
  return `<tr${fresh ? ' class="fresh"' : ''}>
<td class="link-cell" data-label="Link">${r.title ? `<div class="link-title">${e(r.title)}</div>` : ''}<div class="short-line"><a class="short" id="short-${e(c)}" href="${e(r.url)}">${e(r.url)}</a>${lock(r.password)}${routingBadges(r)}<button type="button" class="copy secondary small" data-copy="short-${e(c)}" aria-label="Copy ${e(r.url)}" hidden>Copy</button></div>
<div class="dest-line"><span class="dest-text" title="${e(r.long_url)}">→&nbsp;${breakable(shortDestination(r.long_url))}</span><input type="hidden" id="dest-${e(c)}" value="${e(r.long_url)}"><button type="button" class="copy link small" data-copy="dest-${e(c)}" aria-label="Copy the whole destination of ${e(c)}" hidden>Copy</button></div>${tagChips(r, query)}${r.max_visits !== null ? `<div class="visits-left${r.visits_left === 0 ? ' used-up' : ''}">${e(visitsLeftText(r))}</div>` : ''}</td>
<td data-label="Mode"><span>${e(r.mode)}</span></td>
<td class="n" data-label="Clicks"><span>${r.clicks}</span></td>
<td class="date" data-label="Created">${time(r.created)}</td>
<td class="date" data-label="Expires"><span>${expiryCell(r)}</span></td>
<td class="row-actions" data-label="Actions"><span><a href="/dashboard/links/${e(c)}/stats">Stats${label}</a> <a href="/qr/${e(c)}.png" target="_blank" rel="noopener">QR<span class="visually-hidden"> ${e(c)} (opens in a new tab)</span></a> <a href="/dashboard/links/${e(c)}">Edit${label}</a> <a class="danger-link" href="/dashboard/links/${e(c)}/delete">Delete${label}</a></span></td>
</tr>`
}

export function listCard(
  result: Awaited<ReturnType<DashboardDeps['links']['search']>>,
  query: ListQuery,
  fresh: string | null,
): string {
  const { q, tag, sort } = query
  const sortLink = (value: LinkSort, text: string) =>
    `<a href="${e(listHref({ q, tag, sort: value }))}"${sort === value ? ' aria-current="true"' : ''}>${text}</a>`
  // The search box is id="search" (the "/" shortcut focuses it); a tag filter stays on while searching.
  const search = `<div class="list-tools">
<form method="get" action="/dashboard" role="search" class="link-search">
<label for="search" class="visually-hidden">Search your links</label>
<input id="search" name="q" type="search" maxlength="${MAX_SEARCH_LENGTH}" placeholder="Search code, destination, title or tag" value="${e(q)}">
${tag ? `<input type="hidden" name="tag" value="${e(tag)}">` : ''}${sort !== 'created' ? `<input type="hidden" name="sort" value="${e(sort)}">` : ''}<button type="submit" class="secondary">Search</button>
${q ? `<a href="${e(listHref({ tag, sort }))}">Clear</a>` : ''}
</form>
<nav class="sort" aria-label="Sort links"><span class="muted">Sort:</span> ${sortLink('created', 'Newest')} ${sortLink('clicks', 'Most clicks')}</nav>
<a class="button secondary small export-link" href="/dashboard/links.csv" download>Export CSV<span class="visually-hidden"> of all your links</span></a>
</div>${tag ? `<p class="tag-filter">Tagged <span class="tag-chip current">${e(tag)}</span> <a href="${e(listHref({ q, sort }))}">Show all tags</a></p>` : ''}`
  if (result.total === 0) {
    const matching = [q ? `matches “${e(q)}”` : '', tag ? `is tagged “${e(tag)}”` : ''].filter(Boolean).join(' and ')
    const empty = matching
      ? `<div class="empty"><p>No link ${matching}.</p><p><a href="${e(listHref({ sort }))}">Show all your links</a></p></div>`
      : `<div class="empty"><p><strong>No links yet.</strong></p><p>Paste a long address in the form above to make your first short link, or create links from scripts with an <a href="/dashboard/keys">API key</a>.</p></div>`
    return `<section class="card" aria-labelledby="list-heading"><h2 id="list-heading">Your links</h2>${matching ? search : ''}${empty}</section>`
  }
  const from = result.offset + 1
  const to = result.offset + result.links.length
  const range = `${from}–${to} of ${result.total}${result.capped ? '+' : ''}`
  const prev =
    result.page > 1
      ? `<a href="${e(listHref({ q, tag, sort, page: result.page - 1 }))}" rel="prev">← Previous</a>`
      : '<span></span>'
  const next =
    result.page < result.pages
      ? `<a href="${e(listHref({ q, tag, sort, page: result.page + 1 }))}" rel="next">Next →</a>`
      : '<span></span>'
  return `<section class="card" aria-labelledby="list-heading">
<h2 id="list-heading">Your links <span class="count">${result.capped ? `${result.total}+` : result.total}</span></h2>
${search}
<div class="table-wrap">
<table class="links-table">
<caption class="visually-hidden">Your links${q ? `, matching “${e(q)}”` : ''}${tag ? `, tagged “${e(tag)}”` : ''}, ${sort === 'clicks' ? 'most clicks first' : 'newest first'}: ${range}</caption>
<thead><tr><th scope="col">Link</th><th scope="col">Mode</th><th scope="col" class="n">Clicks</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Actions</th></tr></thead>
<tbody>
${result.links.map((r) => row(r, r.hex === fresh, query)).join('\n')}
</tbody>
</table>
</div>
<nav class="pager" aria-label="Pages">${prev}<span class="range">${range}</span>${next}</nav>
</section>`
}

export interface EditForm {
  url: string
  mode: string
  expire: string
  passwordAction: 'keep' | 'set' | 'remove'
  tags: string
  max_visits: string
  rules: string
  split: string
  title: string
}

/** The limit, rules and split of a link as the edit form shows them. */
export function currentRouting(r: LinkRecord): Pick<EditForm, 'max_visits' | 'rules' | 'split'> {
  return {
    max_visits: r.max_visits === null ? '' : String(r.max_visits),
    rules: jsonArea(r.rules),
    split: jsonArea(r.split),
  }
}
