// The link forms' expiry destination and UTM builder (issue 40): five fields read back from the destination's
// query, a value changed from what the page showed set in it by the server (an emptied one removes it), the
// resulting URL shown live by assets/app-utm.js. Without the script the fields work the same: the server merges.
import {
  MAX_UTM_LENGTH,
  mergeUtm,
  type Checked,
  type LinkRecord,
  UTM_PARAMS,
  type UtmParam,
  utmValuesOf,
} from '../links'
import { escapeHtml as e } from '../web/render'
import { schemeAttrs, schemeHint, withScheme } from './form-help'
import type { FieldErrors } from './routing-editor'

export type UtmFields = Record<UtmParam, string>
/** What both forms keep of these fields (and a lost session keeps them too). */
export const EXTRA_FIELDS = ['expired_url', ...UTM_PARAMS] as const
export const NO_UTM: UtmFields = { utm_source: '', utm_medium: '', utm_campaign: '', utm_term: '', utm_content: '' }

const LABELS: Record<UtmParam, [string, string]> = {
  utm_source: ['Source', 'newsletter'],
  utm_medium: ['Medium', 'email'],
  utm_campaign: ['Campaign', 'spring-sale'],
  utm_term: ['Term', 'running shoes'],
  utm_content: ['Content', 'header-button'],
}
/** The fields' names as people read them (the service's messages name utm_source…). */
export const EXTRA_NAMES: Record<string, string> = {
  expired_url: 'The expiry destination',
  utm_source: 'The UTM source',
  utm_medium: 'The UTM medium',
  utm_campaign: 'The UTM campaign',
  utm_term: 'The UTM term',
  utm_content: 'The UTM content',
}

/** The fields as a form sent them (absent ones as `fallback` has them). */
export function extrasSent(
  get: (name: string) => string | null | undefined,
  fallback: { expired_url: string; utm: UtmFields },
): { expired_url: string; utm: UtmFields } {
  const utm = { ...fallback.utm }
  for (const n of UTM_PARAMS) utm[n] = get(n) ?? fallback.utm[n]
  const typed = get('expired_url')
  return { expired_url: typed == null ? fallback.expired_url : withScheme(typed), utm }
}

/** A link's fields as its edit page shows them: its expiry destination, the UTM values of its destination. */
export const extrasOfLink = (r: LinkRecord) => ({ expired_url: r.expired_url ?? '', utm: utmValuesOf(r.long_url) })

/** The UTM values that differ from what the page showed (`shown`): those are set in the destination. */
export function utmChanged(utm: UtmFields, shown: UtmFields): Partial<UtmFields> {
  const changed: Partial<UtmFields> = {}
  for (const n of UTM_PARAMS) if (utm[n] !== shown[n]) changed[n] = utm[n]
  return changed
}

/**
 * The values to check with the service's rules (each error beside its field): the UTM values that will be sent,
 * those changed from `shown` (a destination typed with a value the builder would refuse is no field's fault).
 */
export function extrasChecked(v: { expired_url: string; utm: UtmFields }, shown: UtmFields = NO_UTM): Checked[] {
  return [
    ...(v.expired_url ? [{ key: 'expired_url', param: 'expired_url' as const, value: v.expired_url }] : []),
    ...UTM_PARAMS.filter((n) => v.utm[n] !== shown[n]).map((n) => ({ key: n, param: n, value: v.utm[n] })),
  ]
}

/** Whether the create form's "More options" opens for these fields (filled in, or refused). */
export const extrasShown = (v: { expired_url: string; utm: UtmFields }, errors: FieldErrors) =>
  !!v.expired_url || UTM_PARAMS.some((n) => v.utm[n]) || EXTRA_FIELDS.some((n) => errors[n])

const errorHtml = (errors: FieldErrors, id: string) =>
  errors[id] ? `<span class="error" id="${id}-error">${e(errors[id])}</span>` : ''

/**
 * The expiry destination and the UTM builder of both forms (ids: expired_url, utm_source…, utm-result). `shown` is
 * what the page shows as the link's (the edit page: its destination's values; the create form: none): a field
 * left as shown is not sent, so a URL typed with its own utm_ parameters keeps them.
 */
export function extraFields(
  v: { url: string; expired_url: string; utm: UtmFields },
  shown: UtmFields,
  errors: FieldErrors,
): string {
  const fields = UTM_PARAMS.map((n) => {
    const bad = errors[n]
    return `<div class="field"><label for="${n}">${LABELS[n][0]} <span class="muted">${n}</span></label>
<input id="${n}" name="${n}" autocomplete="off" spellcheck="false" maxlength="${MAX_UTM_LENGTH}" placeholder="${LABELS[n][1]}" value="${e(v.utm[n])}" data-utm data-shown="${e(shown[n])}"${bad ? ` aria-invalid="true" aria-describedby="${n}-error"` : ''}>${errorHtml(errors, n)}</div>`
  }).join('\n')
  const result = v.url ? mergeUtm(v.url, utmChanged(v.utm, shown)) : ''
  return `<div class="field expired-url"><label for="expired_url">Expiry destination <span class="optional">(optional)</span></label>
<input id="expired_url" name="expired_url" type="text" inputmode="url" autocomplete="off" spellcheck="false" autocapitalize="off" maxlength="4096" placeholder="https://example.com/offer-ended" value="${e(v.expired_url)}" data-scheme${schemeAttrs('expired_url', !!errors.expired_url).replace('aria-describedby="', 'aria-describedby="expired_url-hint ')}>
<span class="hint" id="expired_url-hint">Where people go once the link has expired or used up its visits. Empty: a page saying so.</span>${schemeHint('expired_url')}${errorHtml(errors, 'expired_url')}</div>
<fieldset class="utm-builder" data-utm-builder>
<legend>UTM parameters <span class="optional">(optional)</span></legend>
<p class="hint" id="utm-hint">Set in the destination’s query for analytics tools; a parameter of the same name is replaced, an emptied field removes it.</p>
<div class="utm-grid">
${fields}
</div>
<p class="utm-result">Destination with them: <code id="utm-result">${e(result)}</code></p>
</fieldset>`
}
