// The dashboard's Links section (/dashboard): the signed-in account's short links — create, search, sort,
// page through, edit, delete, copy, QR and statistics — through the same link service the API uses, with
// the session's caller, so that what may be seen and changed is exactly what the account's key may.
// Every page works without JavaScript (forms post, then 303 to a page — a refused form too, its values
// and errors kept on the server for the page it goes back to); the create form's one-time token makes a
// form sent twice make one link; every string from a link or a request is escaped here. Tags (issue 23):
// set in both forms, shown as chips that filter the list (?tag=), searched by the search box (?q=); the
// account's links can be exported (GET /dashboard/links.csv, the API's CSV). Visit limits, redirect rules
// and A/B splits (SPEC §2a): a number field and two JSON text areas (an example in each hint), under "More
// options" and on the edit page; the list says "3 of 10 visits left" and badges links with rules or a split.
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import { csvExportResponse } from '../links'
import type { LinkRecord, LinkSort } from '../links'
import { MAX_SEARCH_LENGTH } from '../links'
import { breakable, dayOf, statsBody, statsCsv, csvTableOf, statsFor, windowOf } from '../links'
import { MAX_JSON_CHARS, MAX_RULES, MAX_SPLIT, MAX_TAG_LENGTH, MAX_TAGS, MAX_TITLE_LENGTH, MAX_VISITS, MIN_SPLIT, MODES } from '../links'
import { escapeHtml as e } from '../web/render'
import type { FormTokens } from './form-tokens'
import { qrImage, qrSection, qrWithLogo } from './link-qr'
import { RepeatedForm } from './form-tokens'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'
import { when } from './shell'

/** The lifetimes offered for a link (seconds; '' is "never"). */
export const LIFETIMES: readonly (readonly [string, string])[] = [
  ['', 'Never'],
  ['3600', '1 hour'],
  ['86400', '1 day'],
  ['604800', '1 week'],
  ['2592000', '30 days'],
  ['31536000', '1 year'],
]
const MODE_LABELS: Record<string, string> = {
  redirect: 'Redirect',
  preview: 'Preview page first',
  frame: 'Framed, with a top bar',
}
/** A code in a dashboard path: the alphabet of generated codes and aliases (validated before any look-up). */
const CODE = /^[A-Za-z0-9_-]{1,64}$/
const DEST_SHOWN = 64

/** Field names as people read them, for the service's messages ("The parameter "url"…" → "The URL…"). */
const FIELD_NAMES: Record<string, string> = {
  url: 'The URL', alias: 'The alias', mode: 'The mode', expire: 'The expiry', password: 'The password', tags: 'The tags',
  max_visits: 'The visit limit', rules: 'The rules', split: 'The split', title: 'The title',
}
/** A tag in the list's URL (?tag=): the alphabet of tags; anything else means no filter. */
const TAG = /^[A-Za-z0-9_-]{1,32}$/
const TAGS_HINT = `Up to ${MAX_TAGS}, separated by commas: letters, digits, _ or -, at most ${MAX_TAG_LENGTH} each.`
/** The tags field as typed, tidied for the service: empty items (a trailing comma) left out. */
const tidyTags = (typed: string) => typed.split(',').map((t) => t.trim()).filter(Boolean).join(',')
// A rule's or an arm's own field ("rules[2].url") keeps its path after the area's name: "The rules: rules[2].url must…".
const humane = (message: string) =>
  message
    .replace(/^The parameter "rules" is\b/, 'The rules are')
    .replace(/^The parameter "((rules|split)\[[^"]*)"/, (_all, path: string, area: string) => `${FIELD_NAMES[area]}: ${path}`)
    .replace(/^The parameter "(\w+)"/, (all, name: string) => FIELD_NAMES[name] ?? all)

/** Which field of the form an error of the link service is about (null: the form as a whole). */
function fieldOf(err: AppError): string | null {
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
function errorOf(errors: FieldErrors, id: string) {
  const msg = errors[id]
  if (!msg) return { attrs: '', html: '' }
  return {
    attrs: ` aria-invalid="true" aria-describedby="${id}-error"`,
    html: `<span class="error" id="${id}-error">${e(msg)}</span>`,
  }
}

const selectOptions = (options: readonly (readonly [string, string])[], selected: string) =>
  options.map(([v, label]) => `<option value="${e(v)}"${v === selected ? ' selected' : ''}>${e(label)}</option>`).join('')

/** A destination as a table shows it: at most DEST_SHOWN characters, without the scheme. */
export function shortDestination(url: string): string {
  const bare = url.replace(/^https?:\/\//i, '')
  return [...bare].length > DEST_SHOWN ? [...bare].slice(0, DEST_SHOWN - 1).join('') + '…' : bare
}

const LOCK_SVG =
  '<svg class="lock" viewBox="0 0 16 16" width="14" height="14" aria-hidden="true" focusable="false"><path fill="currentColor" d="M4.5 7V5a3.5 3.5 0 0 1 7 0v2h.5A1 1 0 0 1 13 8v6a1 1 0 0 1-1 1H4a1 1 0 0 1-1-1V8a1 1 0 0 1 1-1zm1.5 0h4V5a2 2 0 0 0-4 0z"/></svg>'
const lock = (has: boolean) => (has ? `<span class="lock-badge" title="Protected by a password">${LOCK_SVG}<span class="visually-hidden">Password protected</span></span>` : '')

const day = (iso: string) => iso.slice(0, 10)
const time = (iso: string) => `<time datetime="${e(iso)}" title="${e(when(Date.parse(iso)))}">${e(day(iso))}</time>`

function expiryCell(r: LinkRecord): string {
  // Disabled by an administrator (issue 26): visitors get a 451 page; the reason is the owner's to read.
  if (r.disabled !== null) return `<span class="tag off" title="${e(r.disabled)}">disabled</span> <span class="disabled-why">${e(r.disabled)}</span>`
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
const EMPTY_FORM: CreateForm = { url: '', alias: '', mode: 'redirect', expire: '', tags: '', max_visits: '', rules: '', split: '', title: '' }
/** The fields of the limit, rules and split, as both forms send them (and a lost session keeps them). */
const ROUTING_FIELDS = ['max_visits', 'rules', 'split'] as const

const RULES_EXAMPLE = '[{"device": ["mobile"], "url": "https://m.example.com/"},\n {"country": ["DE", "AT"], "url": "https://example.com/de"}]'
const SPLIT_EXAMPLE = '[{"url": "https://example.com/a", "weight": 50},\n {"url": "https://example.com/b", "weight": 50}]'

/**
 * The visit limit and the two JSON areas of both forms (ids: max_visits, rules, split, each with -hint and
 * -error). `left` is the edit page's "3 of 10 visits left".
 */
function routingFields(v: Pick<CreateForm, 'max_visits' | 'rules' | 'split'>, errors: FieldErrors, left = ''): string {
  const described = (id: string) => `aria-describedby="${id}-hint${errors[id] ? ` ${id}-error` : ''}"${errors[id] ? ' aria-invalid="true"' : ''}`
  const area = (id: 'rules' | 'split', label: string, hint: string, example: string) => `<div class="field span-all"><label for="${id}">${label} <span class="optional">(optional)</span></label>
<textarea id="${id}" name="${id}" class="json" rows="3" maxlength="${MAX_JSON_CHARS}" spellcheck="false" autocapitalize="off" autocomplete="off" placeholder="${e(example)}" ${described(id)}>${e(v[id])}</textarea>
<span class="hint" id="${id}-hint">${hint} For example: <code>${e(example)}</code></span>${errorOf(errors, id).html}</div>`
  return `<div class="field"><label for="max_visits">Visit limit <span class="optional">(optional)</span></label>
<input id="max_visits" name="max_visits" type="number" inputmode="numeric" min="0" max="${MAX_VISITS}" step="1" autocomplete="off" value="${e(v.max_visits)}" ${described('max_visits')}>
<span class="hint" id="max_visits-hint">${left ? `${e(left)}. ` : ''}After this many visits by people the link stops (bots and link previews use none). Empty: no limit.</span>${errorOf(errors, 'max_visits').html}</div>
${area('rules', 'Redirect rules', `A JSON list of at most ${MAX_RULES} rules, each a <code>url</code> and one or more of <code>device</code> (desktop, mobile, tablet, other), <code>os</code>, <code>country</code> (two letters) and <code>language</code> (e.g. de); the first rule that matches sends the visitor to its URL. Empty: none.`, RULES_EXAMPLE)}
${area('split', 'A/B split', `A JSON list of ${MIN_SPLIT} to ${MAX_SPLIT} URLs with weights from 1 to 100; visitors no rule sends elsewhere are shared out by weight, each keeping theirs all day. Empty: none.`, SPLIT_EXAMPLE)}`
}

/** "3 of 10 visits left" (or "" for a link without a limit). */
const visitsLeftText = (r: LinkRecord) =>
  r.max_visits === null ? '' : `${r.visits_left} of ${r.max_visits} ${r.max_visits === 1 ? 'visit' : 'visits'} left`
/** Rules and split as the edit form shows them: the stored JSON, one item a line ('' for none). */
const jsonArea = (items: readonly unknown[] | undefined) => (items?.length ? `[${items.map((i) => JSON.stringify(i)).join(',\n ')}]` : '')

/** A refused form, kept for the page it is sent back to (what was typed, never the password). */
interface Refused<F> {
  values: F
  errors: FieldErrors
  formError?: string
}

function createCard(s: Session, tokens: FormTokens, form: CreateForm, errors: FieldErrors): string {
  const url = errorOf(errors, 'url')
  const alias = errorOf(errors, 'alias')
  const mode = errorOf(errors, 'mode')
  const expire = errorOf(errors, 'expire')
  const password = errorOf(errors, 'password')
  const more = !!(form.alias || form.mode !== 'redirect' || form.expire || form.tags || form.max_visits || form.rules || form.split || form.title ||
    errors.alias || errors.mode || errors.expire || errors.password || errors.tags || errors.max_visits || errors.rules || errors.split || errors.title)
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
<select id="mode" name="mode"${mode.attrs}>${selectOptions(MODES.map((m) => [m, MODE_LABELS[m] ?? m] as const), form.mode)}</select>${mode.html}</div>
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
function titleField(value: string, errors: FieldErrors): string {
  const title = errorOf(errors, 'title')
  return `<div class="field"><label for="title">Title <span class="optional">(optional)</span></label>
<input id="title" name="title" autocomplete="off" maxlength="${MAX_TITLE_LENGTH}" value="${e(value)}"${title.attrs}>${title.html}</div>`
}

/** The tags field of both forms (ids: tags, tags-hint, tags-error). */
function tagsField(value: string, errors: FieldErrors): string {
  return `<div class="field"><label for="tags">Tags <span class="optional">(optional)</span></label>
<input id="tags" name="tags" autocomplete="off" maxlength="400" placeholder="news, spring-sale" value="${e(value)}" aria-describedby="tags-hint${errors.tags ? ' tags-error' : ''}"${errors.tags ? ' aria-invalid="true"' : ''}>
<span class="hint" id="tags-hint">${e(TAGS_HINT)}</span>${errorOf(errors, 'tags').html}</div>`
}

/** A link's tags as chips, each a link to the list of that tag. */
function tagChips(r: LinkRecord, current: ListQuery): string {
  if (r.tags.length === 0) return ''
  const chips = r.tags.map(
    (t) => `<li><a class="tag-chip" href="${e(listHref({ tag: t, sort: current.sort }))}"${t === current.tag ? ' aria-current="true"' : ''}><span class="visually-hidden">Links tagged </span>${e(t)}</a></li>`,
  )
  return `<ul class="tag-chips" aria-label="Tags of ${e(r.hex)}">${chips.join('')}</ul>`
}

/** "rules" and "A/B" badges for a link whose visitors may go elsewhere than its URL. */
function routingBadges(r: LinkRecord): string {
  const badge = (text: string, title: string) => ` <span class="tag routing" title="${title}">${text}</span>`
  return (r.rules ? badge('rules', `${r.rules.length} redirect ${r.rules.length === 1 ? 'rule' : 'rules'}`) : '') + (r.split ? badge('A/B', `Split over ${r.split.length} destinations`) : '')
}

function row(r: LinkRecord, fresh: boolean, query: ListQuery): string {
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

function listCard(result: Awaited<ReturnType<DashboardDeps['links']['search']>>, query: ListQuery, fresh: string | null): string {
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
  const prev = result.page > 1 ? `<a href="${e(listHref({ q, tag, sort, page: result.page - 1 }))}" rel="prev">← Previous</a>` : '<span></span>'
  const next = result.page < result.pages ? `<a href="${e(listHref({ q, tag, sort, page: result.page + 1 }))}" rel="next">Next →</a>` : '<span></span>'
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

export function createLinksSection({ shell, links, qr, clock }: DashboardDeps) {
  const { tokens } = shell

  /** The list with the create form; with ?form=ID, the refused form as it was sent, with its errors. */
  async function listPage(request: Request, s: Session, draft?: { form: CreateForm }) {
    const url = new URL(request.url)
    // A refused form (?form=ID) as it was sent, or what was typed before the session ended (shell.requireForm).
    const refused = (await shell.refusedState<Refused<CreateForm>>(request, shell.ownerOf(s))) ?? (draft ? { values: draft.form, errors: {} } : null)
    const query = listQuery(url)
    const freshParam = url.searchParams.get('new')
    const fresh = freshParam && CODE.test(freshParam) ? freshParam : null
    const result = await links.search(query, s.caller)
    const content = `<div class="links-page"><h1>Links</h1>${createCard(s, tokens, refused?.values ?? EMPTY_FORM, refused?.errors ?? {})}${listCard(result, query, fresh)}</div>`
    return shell.render(request, s, {
      section: 'links',
      title: 'Links',
      content,
      notice: refused?.formError ? { kind: 'error', text: refused.formError } : undefined,
    })
  }

  function notFoundPage(request: Request, s: Session, code: string) {
    return shell.render(request, s, {
      section: 'links',
      title: 'Link not found',
      status: 404,
      content: `<div class="links-page"><h1>Link not found</h1><div class="card"><p>Your account has no link with the code <code>${e(code.slice(0, 64))}</code>. It may have been deleted.</p><p><a href="/dashboard">Back to your links</a></p></div></div>`,
    })
  }

  /** The caller's link, or null (unknown, another account's, or not a code at all: all answered 404). */
  async function ownedLink(code: string, s: Session): Promise<LinkRecord | null> {
    if (!CODE.test(code)) return null
    try {
      return await links.get({ code }, s.caller)
    } catch (err) {
      if (err instanceof AppError && (err.status === 404 || err.code === 'not_owner' || err.status === 400)) return null
      throw err
    }
  }

  /** A link's edit page; with ?form=ID, the refused form as it was sent, with its errors. */
  async function editPage(request: Request, s: Session, r: LinkRecord, draft?: { values: EditForm }) {
    const opts = (await shell.refusedState<Refused<EditForm>>(request, shell.ownerOf(s))) ?? (draft ? { values: draft.values, errors: {} } : undefined)
    const v = opts?.values ?? { url: r.long_url, mode: r.mode, expire: 'keep', passwordAction: 'keep', tags: r.tags.join(', '), title: r.title, ...currentRouting(r) }
    const errors = opts?.errors ?? {}
    const url = errorOf(errors, 'url')
    const mode = errorOf(errors, 'mode')
    const expire = errorOf(errors, 'expire')
    const pw = errorOf(errors, 'password')
    const c = e(r.hex)
    const currentExpiry = !r.expires ? 'It never expires.' : r.expired ? `It expired ${when(Date.parse(r.expires))}.` : `It expires ${when(Date.parse(r.expires))}.`
    const expireOptions: [string, string][] = [['keep', 'Keep as it is'], ['0', 'Never'], ...LIFETIMES.slice(1).map(([sec, label]) => [sec, `${label} from now`] as [string, string])]
    const radio = (value: string, text: string, extra = '') =>
      `<label class="choice"><input type="radio" name="password_action" value="${value}"${v.passwordAction === value ? ' checked' : ''}${extra}> ${text}</label>`
    const content = `<div class="links-page"><p class="back"><a href="/dashboard">← All links</a></p>
<h1>Edit <code>${c}</code></h1>
<div class="edit-layout">
<section class="card" aria-labelledby="edit-heading">
<h2 id="edit-heading">Settings</h2>
<form method="post" action="/dashboard/links/${c}" class="stack">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
<div class="field"><label for="url">Destination URL</label>
<input id="url" name="url" type="url" inputmode="url" autocomplete="off" required maxlength="4096" value="${e(v.url)}"${url.attrs}>${url.html}</div>
<div class="form-grid">
<div class="field"><label for="mode">Mode</label>
<select id="mode" name="mode"${mode.attrs}>${selectOptions(MODES.map((m) => [m, MODE_LABELS[m] ?? m] as const), v.mode)}</select>${mode.html}</div>
<div class="field"><label for="expire">Expiry</label>
<select id="expire" name="expire" aria-describedby="expire-hint${errors.expire ? ' expire-error' : ''}"${errors.expire ? ' aria-invalid="true"' : ''}>${selectOptions(expireOptions, v.expire)}</select>
<span class="hint" id="expire-hint">${e(currentExpiry)}</span>${expire.html}</div>
${titleField(v.title, errors)}
${tagsField(v.tags, errors)}
${routingFields(v, errors, visitsLeftText(r))}
</div>
<fieldset class="password-choice"${errors.password ? ' aria-describedby="password-error"' : ''}>
<legend>Password <span class="muted">(${r.password ? 'this link has one' : 'none set'})</span></legend>
${radio('keep', r.password ? 'Keep the current password' : 'No password')}
${radio('set', r.password ? 'Set a new password' : 'Set a password')}
${r.password ? radio('remove', 'Remove the password') : ''}
<div class="field"><label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" maxlength="128" aria-describedby="password-hint${errors.password ? ' password-error' : ''}"${errors.password ? ' aria-invalid="true"' : ''}>
<span class="hint" id="password-hint">Used when “${r.password ? 'Set a new password' : 'Set a password'}” is chosen; 1–128 characters.</span>${pw.html}</div>
</fieldset>
<div class="actions"><button type="submit">Save changes</button><a href="/dashboard">Cancel</a></div>
</form>
</section>
<aside class="card link-side" aria-labelledby="qr-heading">
<h2 id="qr-heading">Short link</h2>
<div class="short-full"><a id="edit-short" href="${e(r.url)}">${breakable(r.url)}</a><button type="button" class="copy secondary small" data-copy="edit-short" aria-label="Copy ${e(r.url)}" hidden>Copy</button></div>
<img class="qr" src="/qr/${c}.svg" width="200" height="200" alt="QR code of ${e(r.url)}">
<p class="downloads">Download <a class="button secondary small" aria-label="Download the QR code as PNG" href="/qr/${c}.png" download="${c}.png">PNG</a> <a class="button secondary small" aria-label="Download the QR code as SVG" href="/qr/${c}.svg" download="${c}.svg">SVG</a></p>
<dl class="facts">
<dt>Clicks</dt><dd>${r.clicks} · <a href="/dashboard/links/${c}/stats">statistics</a></dd>
${r.max_visits !== null ? `<dt>Visits</dt><dd>${e(visitsLeftText(r))}</dd>` : ''}
<dt>Created</dt><dd>${e(when(Date.parse(r.created)))}</dd>
${r.tags.length ? `<dt>Tags</dt><dd>${tagChips(r, { q: '', tag: '', sort: 'created', page: 1 })}</dd>` : ''}
</dl>
<p><a class="danger-link" href="/dashboard/links/${c}/delete">Delete this link…</a></p>
</aside>
</div>
${qrSection(r.hex, r.url, new URL(request.url), s.csrf)}
</div>`
    return shell.render(request, s, {
      section: 'links',
      title: `Edit ${r.hex}`,
      content,
      notice: opts?.formError ? { kind: 'error', text: opts.formError } : undefined,
    })
  }

  /** A link's QR image styled by the query (link-qr.ts): the session's own links only. */
  async function linkQr(request: Request, code: string, format: 'png' | 'svg') {
    const s = await shell.require(request)
    if (s instanceof Response) return s
    const r = await ownedLink(code, s)
    if (!r) return new Response('No such link.', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' } })
    return qrImage(qr, s.caller.accountId, r.hex, r.url, format, new URL(request.url))
  }

  /**
   * A link's statistics for its owner (the public page's, with the destination even when a password
   * protects it), for the period or dates in the URL; with `csv`, its downloads. Other accounts' links and
   * visitors without a session get what any dashboard page gives them (404, the sign-in page).
   */
  async function statsPage(request: Request, code: string, csv: boolean): Promise<Response> {
    const s = await shell.require(request)
    if (s instanceof Response) return s
    const r = await ownedLink(code, s)
    if (!r) return notFoundPage(request, s, code)
    const window = windowOf(request.url)
    const now = clock()
    const { s: answer, error } = await statsFor((from, to) => links.stats({ code: r.hex, from, to }, s.caller), window, now)
    const path = `/dashboard/links/${encodeURIComponent(r.hex)}/stats`
    if (csv) {
      if (!error) return statsCsv(answer, csvTableOf(request.url), { 'cache-control': 'no-store' })
      return shell.render(request, s, { section: 'links', title: 'Dates refused', status: 400, content: `<div class="links-page"><h1>Dates refused</h1><div class="card"><p>${e(error.message)}</p><p><a href="${e(path)}">Back to the statistics</a></p></div></div>` })
    }
    const body = statsBody(answer, { path, csvPath: `${path}.csv`, window, error, today: dayOf(now) })
    return shell.render(request, s, {
      section: 'links',
      title: `Statistics of ${r.hex}`,
      status: error ? 400 : 200,
      content: `<div class="links-page stats"><p class="back"><a href="/dashboard">← All links</a> · <a href="/dashboard/links/${e(r.hex)}">Edit ${e(r.hex)}</a> · <a href="/${e(r.hex)}+">Public page</a></p>${body}</div>`,
    })
  }

  const app = new Elysia({ name: 'dashboard-links' })
    .get('/dashboard', async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      // Typed before the session ended (see shell.requireForm): the form shows it again.
      const d = shell.draft(request)
      if (d)
        return listPage(request, s, {
          form: {
            url: d.get('url') ?? '', alias: d.get('alias') ?? '', mode: d.get('mode') || 'redirect', expire: d.get('expire') ?? '', tags: d.get('tags') ?? '',
            max_visits: d.get('max_visits') ?? '', rules: d.get('rules') ?? '', split: d.get('split') ?? '', title: d.get('title') ?? '',
          },
        })
      return listPage(request, s)
    })
    .post(
      '/dashboard/links',
      async ({ request }) => {
        const s = await shell.requireForm(request, { page: '/dashboard', keep: ['url', 'alias', 'mode', 'expire', 'tags', 'title', ...ROUTING_FIELDS] })
        if (s instanceof Response) return s
        const f = await shell.form(request, s)
        // Sent before (a double click, back and send again): no second link; the first answer's page.
        const sent = tokens.of(f)
        const before = await tokens.used(sent, s.id)
        if (before !== undefined) return shell.repeated(before ?? '/dashboard')
        const form: CreateForm = {
          url: (f.get('url') ?? '').trim(),
          alias: (f.get('alias') ?? '').trim(),
          mode: f.get('mode') || 'redirect',
          expire: f.get('expire') ?? '',
          tags: (f.get('tags') ?? '').trim(),
          max_visits: (f.get('max_visits') ?? '').trim(),
          rules: (f.get('rules') ?? '').trim(),
          split: (f.get('split') ?? '').trim(),
          title: f.get('title') ?? '',
        }
        const fresh = (code: string) => `/dashboard?new=${encodeURIComponent(code)}`
        try {
          const r = await links.create(
            {
              url: form.url, alias: form.alias, mode: form.mode, expire: form.expire, password: f.get('password') ?? '', tags: tidyTags(form.tags),
              max_visits: form.max_visits, rules: form.rules, split: form.split, title: form.title,
            },
            s.caller,
            { within: (tx, link) => tokens.claim(tx, sent, s.id, fresh(link.code)) },
          )
          return shell.seeOther(fresh(r.hex), { kind: 'ok', text: `Created ${r.url} → ${shortDestination(r.long_url)}` })
        } catch (err) {
          if (err instanceof RepeatedForm) return shell.repeated(err.result ?? '/dashboard')
          if (!(err instanceof AppError) || err.status >= 500) throw err
          const field = fieldOf(err)
          return shell.refused(shell.ownerOf(s), '/dashboard', {
            values: form,
            errors: field ? { [field]: humane(err.message) } : {},
            formError: field ? undefined : humane(err.message),
          } satisfies Refused<CreateForm>)
        }
      },
      { parse: 'none' },
    )
    // Every link of the account as CSV: the same file as the API's links.json?format=csv.
    .get('/dashboard/links.csv', async ({ request }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      return csvExportResponse(links.exportPages(s.caller), links.now())
    })
    .get('/dashboard/links/:code', async ({ request, params }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const r = await ownedLink(params.code, s)
      if (!r) return notFoundPage(request, s, params.code)
      const d = shell.draft(request)
      if (!d) return editPage(request, s, r)
      const action = d.get('password_action')
      return editPage(request, s, r, {
        values: {
          url: d.get('url') ?? r.long_url,
          mode: d.get('mode') ?? r.mode,
          expire: d.get('expire') ?? 'keep',
          passwordAction: action === 'set' || action === 'remove' ? action : 'keep',
          tags: d.get('tags') ?? r.tags.join(', '),
          max_visits: d.get('max_visits') ?? currentRouting(r).max_visits,
          rules: d.get('rules') ?? currentRouting(r).rules,
          split: d.get('split') ?? currentRouting(r).split,
          title: d.get('title') ?? r.title,
        },
      })
    })
    .post(
      '/dashboard/links/:code',
      async ({ request, params }) => {
        const s = await shell.requireForm(request, { keep: ['url', 'mode', 'expire', 'password_action', 'tags', 'title', ...ROUTING_FIELDS] })
        if (s instanceof Response) return s
        const f = await shell.form(request, s)
        const r = await ownedLink(params.code, s)
        if (!r) return notFoundPage(request, s, params.code)
        const values: EditForm = {
          url: (f.get('url') ?? '').trim(),
          mode: f.get('mode') ?? r.mode,
          expire: f.get('expire') ?? 'keep',
          passwordAction: ['set', 'remove'].includes(f.get('password_action') ?? '') ? (f.get('password_action') as 'set' | 'remove') : 'keep',
          tags: f.get('tags') ?? r.tags.join(', '),
          max_visits: (f.get('max_visits') ?? '').trim(),
          // A browser sends a text area's line ends as CRLF; the page showed LF.
          rules: (f.get('rules') ?? '').replace(/\r\n?/g, '\n').trim(),
          split: (f.get('split') ?? '').replace(/\r\n?/g, '\n').trim(),
          title: f.get('title') ?? r.title,
        }
        const changes: { url?: string; mode?: string; expire?: string; password?: string; tags?: string; max_visits?: string; rules?: string; split?: string; title?: string } = {}
        // The limit, rules and split are sent when they differ from what the page showed ("" removes each).
        const shown = currentRouting(r)
        for (const k of ROUTING_FIELDS) if (f.has(k) && values[k] !== shown[k].trim()) changes[k] = values[k]
        if (values.url !== r.long_url) changes.url = values.url
        if (values.mode !== r.mode) changes.mode = values.mode
        // A text input drops line breaks: a title over two lines (an import's) is changed only when edited.
        if (values.title !== r.title.replace(/[\r\n]/g, '')) changes.title = values.title
        if (values.expire !== 'keep') changes.expire = values.expire
        if (values.passwordAction === 'remove') changes.password = ''
        // Tags as typed, compared as the service would store them (case and order do not count).
        const typedTags = tidyTags(values.tags)
        const sameTags = (a: string[], b: string[]) => a.length === b.length && a.every((t, i) => t === b[i])
        if (!sameTags([...new Set(typedTags.toLowerCase().split(',').filter(Boolean))].sort(), r.tags)) changes.tags = typedTags
        const page = `/dashboard/links/${r.hex}`
        const refuse = (state: Refused<EditForm>) => shell.refused(shell.ownerOf(s), page, state)
        if (values.passwordAction === 'set') {
          const pw = f.get('password') ?? ''
          if (pw === '') return refuse({ values, errors: { password: 'Type the new password, or choose to keep the current one.' } })
          changes.password = pw
        }
        if (Object.keys(changes).length === 0) return shell.seeOther(`/dashboard/links/${r.hex}`, { kind: 'ok', text: 'Nothing to change.' })
        try {
          await links.update({ code: r.hex, ...changes }, s.caller)
        } catch (err) {
          if (!(err instanceof AppError) || err.status >= 500) throw err
          if (err.status === 404 || err.code === 'not_owner') return notFoundPage(request, s, r.hex)
          const field = fieldOf(err)
          return refuse({ values, errors: field ? { [field]: humane(err.message) } : {}, formError: field ? undefined : humane(err.message) })
        }
        return shell.seeOther(`/dashboard/links/${r.hex}`, { kind: 'ok', text: `Saved the changes to ${r.url}.` })
      },
      { parse: 'none' },
    )
    .get('/dashboard/links/:code/qr.png', ({ request, params }) => linkQr(request, params.code, 'png'))
    .get('/dashboard/links/:code/qr.svg', ({ request, params }) => linkQr(request, params.code, 'svg'))
    .post(
      '/dashboard/links/:code/qr',
      async ({ request, params }) => {
        const s = await shell.require(request, `/dashboard/links/${CODE.test(params.code) ? params.code : ''}`)
        if (s instanceof Response) return s
        const r = await ownedLink(params.code, s)
        if (!r) return notFoundPage(request, s, params.code)
        const opts = { request, accountId: s.caller.accountId, csrf: s.csrf, crossSite: shell.crossSite(request), refused: shell.csrfRefused, code: r.hex, shortUrl: r.url }
        return qrWithLogo(qr, opts, (location, reason) => shell.seeOther(location, { kind: 'error', text: reason }))
      },
      { parse: 'none' },
    )
    .get('/dashboard/links/:code/stats', ({ request, params }) => statsPage(request, params.code, false))
    .get('/dashboard/links/:code/stats.csv', ({ request, params }) => statsPage(request, params.code, true))
    .get('/dashboard/links/:code/delete', async ({ request, params }) => {
      const s = await shell.require(request)
      if (s instanceof Response) return s
      const r = await ownedLink(params.code, s)
      if (!r) return notFoundPage(request, s, params.code)
      const c = e(r.hex)
      return shell.render(request, s, {
        section: 'links',
        title: `Delete ${r.hex}`,
        content: `<div class="links-page"><p class="back"><a href="/dashboard">← All links</a></p>
<h1>Delete this link?</h1>
<section class="card confirm">
<dl class="facts">
<dt>Short link</dt><dd><code>${e(r.url)}</code>${lock(r.password)}</dd>
<dt>Destination</dt><dd class="dest-full">${breakable(r.long_url)}</dd>
<dt>Clicks</dt><dd>${r.clicks}</dd>
<dt>Created</dt><dd>${e(when(Date.parse(r.created)))}</dd>
</dl>
<p class="warn-text">Its statistics and QR code are deleted with it, and the code <code>${c}</code> becomes free for anyone. This cannot be undone.</p>
<form method="post" action="/dashboard/links/${c}/delete" class="actions">
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
<button type="submit" class="danger">Delete ${c}</button><a href="/dashboard/links/${c}">Cancel</a>
</form>
</section></div>`,
      })
    })
    .post(
      '/dashboard/links/:code/delete',
      async ({ request, params }) => {
        const s = await shell.require(request)
        if (s instanceof Response) return s
        await shell.form(request, s)
        const r = await ownedLink(params.code, s)
        if (!r) return notFoundPage(request, s, params.code)
        try {
          await links.delete({ code: r.hex }, s.caller)
        } catch (err) {
          if (err instanceof AppError && (err.status === 404 || err.code === 'not_owner')) return notFoundPage(request, s, r.hex)
          throw err
        }
        return shell.seeOther('/dashboard', { kind: 'ok', text: `Deleted ${r.url}.` })
      },
      { parse: 'none' },
    )
  return app
}

interface EditForm {
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
function currentRouting(r: LinkRecord): Pick<EditForm, 'max_visits' | 'rules' | 'split'> {
  return { max_visits: r.max_visits === null ? '' : String(r.max_visits), rules: jsonArea(r.rules), split: jsonArea(r.split) }
}
