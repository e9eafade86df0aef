// The Links section's two forms (create and edit): their fields, the values they keep, and the link service's
// errors as each field shows them (no I/O).
import type { AppError } from '../kernel/errors'
import { type Checked, MAX_TAG_LENGTH, MAX_TAGS, MAX_TITLE_LENGTH, MAX_VISITS, MODES, type LinkRecord } from '../links'
import { escapeHtml as e } from '../web/render'
import { normaliseTags, plainWords, schemeAttrs, schemeHint, withScheme } from './form-help'
import { type FieldErrors, routingEditor } from './routing-editor'
import { EDITOR_FIELDS, type Problems, type Routing, routingOfLink, routingProblems } from './routing-form'
import type { FormTokens } from './form-tokens'
import type { Session } from './sessions'
import { EXTRA_NAMES, extraFields, extrasShown, NO_UTM, type UtmFields } from './link-utm'

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
  ...EXTRA_NAMES,
}

export const TAGS_HINT = `Up to ${MAX_TAGS}, separated by commas: letters, digits, _ or -, at most ${MAX_TAG_LENGTH} each; written as they are kept (“Summer Sale” is summer-sale).`
/** A refusal of the link service for a field, in plain words beside it ("The URL must be …"). */
export const plainError = (field: string | null, message: string) =>
  plainWords(field ? (FIELD_NAMES[field] ?? 'This') : 'This', message)

/**
 * Every field's problem at once, by field id: each value under the service's rules on its own, the tags as
 * the form writes them, and each rule's and destination's row; addresses typed without a scheme get https://
 * (listed in `fixed`, changed in `routing` too).
 */
export function formErrors(
  problems: Problems,
  fields: readonly Checked[],
  tagsProblem: string,
  routing: Routing,
): { errors: FieldErrors; fixed: string[] } {
  const { errors, fixed } = routingProblems(routing, problems)
  for (const [key, err] of problems(fields)) errors[key] = plainError(key, err.message)
  if (tagsProblem) errors.tags = tagsProblem
  return { errors, fixed }
}

/** The destination as typed, with https:// when it had no scheme (and the note that it was added). */
export function destinationOf(typed: string): { url: string; fixed: string[] } {
  const url = withScheme(typed)
  return { url, fixed: url !== typed.trim() ? [typed.trim()] : [] }
}
export { normaliseTags }

/** Which field of the form an error of the link service is about (null: the form as a whole). */
export function fieldOf(err: AppError): string | null {
  // A rule's or an arm's URL is refused as invalid_url too: it belongs to its text area, not to "url".
  const area = /^The parameter "(rules|split|expired_url)\b/.exec(err.message)?.[1]
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

export type { FieldErrors }

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
  rules: Routing['rules']
  split: Routing['split']
  title: string
  /** The short domain's host ('' the default). */
  domain?: string
  expired_url: string
  utm: UtmFields
}
export const EMPTY_FORM: CreateForm = {
  url: '',
  alias: '',
  mode: 'redirect',
  expire: '',
  tags: '',
  max_visits: '',
  rules: [],
  split: [],
  title: '',
  expired_url: '',
  utm: NO_UTM,
}
/** The fields of the limit, rules and split, as both forms send them (and a lost session keeps them). */
export const ROUTING_FIELDS = ['max_visits', 'rules', 'split', ...EDITOR_FIELDS] as const

/**
 * The visit limit and the rules and split editor of both forms (ids: max_visits with -hint and -error; the
 * editor's in routing-editor.ts). `left` is the edit page's "3 of 10 visits left".
 */
export function routingFields(
  v: Pick<CreateForm, 'max_visits' | 'rules' | 'split'>,
  errors: FieldErrors,
  left = '',
): string {
  const bad = errors.max_visits
  return `<div class="field"><label for="max_visits">Visit limit <span class="optional">(optional)</span></label>
<input id="max_visits" name="max_visits" type="number" inputmode="numeric" min="0" max="${MAX_VISITS}" step="1" autocomplete="off" value="${e(v.max_visits)}" aria-describedby="max_visits-hint${bad ? ' max_visits-error' : ''}"${bad ? ' aria-invalid="true"' : ''}>
<span class="hint" id="max_visits-hint">${left ? `${e(left)}. ` : ''}After this many visits by people the link stops (bots and link previews use none). Empty: no limit.</span>${errorOf(errors, 'max_visits').html}</div>
${routingEditor(v, errors)}`
}

/** A refused form, kept for the page it is sent back to (what was typed, never the password). */
export interface Refused<F> {
  values: F
  errors: FieldErrors
  formError?: string
}

/** The create form's domain picker, when the service has several short domains (SPEC §13; hosts[0] the default). */
function domainField(hosts: readonly string[], chosen: string): string {
  if (hosts.length < 2) return ''
  const options = hosts.map((h, i) => [i === 0 ? '' : h, h] as const)
  return `<div class="field"><label for="domain">Domain</label>
<select id="domain" name="domain">${selectOptions(options, chosen)}</select></div>`
}

export function createCard(
  s: Session,
  tokens: FormTokens,
  form: CreateForm,
  errors: FieldErrors,
  hosts: readonly string[] = [],
): string {
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
    form.rules.length ||
    form.split.length ||
    form.title ||
    extrasShown(form, errors) ||
    errors.alias ||
    errors.mode ||
    errors.expire ||
    errors.password ||
    errors.tags ||
    errors.max_visits ||
    errors.title ||
    Object.keys(errors).some((k) => /^(rules|split|rule_|split_)/.test(k))
  )
  return `<section class="card link-new" aria-labelledby="new-heading">
<h2 id="new-heading">Shorten a link</h2>
<form method="post" action="/dashboard/links" novalidate>
<input type="hidden" name="_csrf" value="${e(s.csrf)}">
${tokens.field()}
<div class="link-new-row">
<div class="field grow"><label for="url">Long URL</label>
<input id="url" name="url" type="text" inputmode="url" autocomplete="off" spellcheck="false" autocapitalize="off" required maxlength="4096" placeholder="https://example.com/a/long/address" value="${e(form.url)}" data-scheme${schemeAttrs('url', !!errors.url)}>${schemeHint('url')}${url.html}</div>
${domainField(hosts, form.domain ?? '')}<button type="submit">Shorten</button>
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
${extraFields(form, NO_UTM, errors)}
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
<input id="tags" name="tags" autocomplete="off" maxlength="400" placeholder="news, spring-sale" value="${e(value)}" aria-describedby="tags-hint tags-preview${errors.tags ? ' tags-error' : ''}"${errors.tags ? ' aria-invalid="true"' : ''} data-tags>
<span class="hint" id="tags-hint">${e(TAGS_HINT)}</span><span class="hint tags-preview" id="tags-preview" aria-live="polite"></span>${errorOf(errors, 'tags').html}</div>`
}

export interface EditForm {
  url: string
  mode: string
  expire: string
  passwordAction: 'keep' | 'set' | 'remove'
  tags: string
  max_visits: string
  rules: Routing['rules']
  split: Routing['split']
  title: string
  expired_url: string
  utm: UtmFields
}

/** The limit, rules and split of a link as the edit form shows them. */
export function currentRouting(r: LinkRecord): Pick<EditForm, 'max_visits' | 'rules' | 'split'> {
  return {
    max_visits: r.max_visits === null ? '' : String(r.max_visits),
    ...routingOfLink(r),
  }
}
