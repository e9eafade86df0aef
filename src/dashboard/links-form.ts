// The Links section's two forms (create and edit): their fields, the values they keep, and the link service's
// errors as each field shows them (no I/O).
import type { AppError } from '../kernel/errors'
import {
  MAX_JSON_CHARS,
  MAX_RULES,
  MAX_SPLIT,
  MAX_TAG_LENGTH,
  MAX_TAGS,
  MAX_TITLE_LENGTH,
  MAX_VISITS,
  MIN_SPLIT,
  MODES,
  type LinkRecord,
} from '../links'
import { escapeHtml as e } from '../web/render'
import type { FormTokens } from './form-tokens'
import type { Session } from './sessions'

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
