// What the link forms do for people as they type (issue 38): an address without its scheme gets https://,
// tags are written the way they are stored ("Summer Sale" → "summer-sale"), and the service's refusals
// are told in plain words beside their field. Pure functions; assets/app-rules.js does the same live.
import { MAX_TAG_LENGTH, MAX_TAGS } from '../links'

/**
 * "www.example.com/page" → "https://www.example.com/page": a host with a dot (or an address, "//host")
 * and no scheme. Anything else is left as typed, for the service to refuse in its own words.
 */
export function withScheme(typed: string): string {
  const t = typed.trim()
  if (t === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(t)) return t
  if (t.startsWith('//')) return `https:${t}`
  const host = t.split(/[/?#]/)[0]!
  return /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.[a-z][a-z0-9-]*\.?(:\d{1,5})?$/i.test(host) ||
    /^\d{1,3}(\.\d{1,3}){3}(:\d{1,5})?$/.test(host)
    ? `https://${t}`
    : t
}

/**
 * The line under an address field (id ID-scheme): it says https:// is added, and the script says there that it
 * was when the field is left (the same line's words change: nothing moves under the pointer).
 */
export const schemeHint = (id: string) =>
  `<span class="hint scheme-note" id="${id}-scheme" aria-live="polite">Typed without https://, it is added.</span>`
/** An address field's aria attributes: its scheme line and its error when it has one. */
export const schemeAttrs = (id: string, error: boolean) =>
  ` aria-describedby="${id}-scheme${error ? ` ${id}-error` : ''}"${error ? ' aria-invalid="true"' : ''}`

/** The note a flash carries when addresses were given their scheme (at most three named; '' for none). */
export function schemeNote(fixed: readonly string[]): string {
  if (fixed.length === 0) return ''
  const named = fixed.slice(0, 3).join(', ') + (fixed.length > 3 ? ` and ${fixed.length - 3} more` : '')
  return `https:// was added in front of ${named}.`
}
/** A flash's text with a note after it ("Created …. https:// was added …"). */
export const withNote = (note: string) => (note ? `. ${note}` : '')

/** One tag the way people type it, as stored: letters without accents, lower case, spaces as "-", no "#". */
export const tagOf = (typed: string) =>
  typed
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .trim()
    .replace(/^#+/, '')
    .toLowerCase()
    .replace(/[\s.]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')

/** The tags field as typed: each tag as stored (once, in order) and every problem with them, in plain words. */
export function normaliseTags(typed: string): { tags: string[]; problem: string } {
  const tags = [...new Set(typed.split(',').map(tagOf).filter(Boolean))]
  const problems: string[] = []
  const odd = tags.filter((t) => !/^[a-z0-9_-]*$/.test(t))
  if (odd.length)
    problems.push(
      `Tags can hold letters, digits, _ and -: ${odd.map((t) => `“${t.slice(0, 40)}”`).join(', ')} ${odd.length > 1 ? 'have' : 'has'} other characters.`,
    )
  const long = tags.filter((t) => t.length > MAX_TAG_LENGTH)
  if (long.length)
    problems.push(`A tag can be at most ${MAX_TAG_LENGTH} characters: “${long[0]!.slice(0, 40)}…” is longer.`)
  if (tags.length > MAX_TAGS) problems.push(`A link can have at most ${MAX_TAGS} tags; there are ${tags.length}.`)
  return { tags, problem: problems.join(' ') }
}

/**
 * A refusal of the link service in plain words for a field: 'The parameter "url" must …' → "The destination
 * must …"; 'The parameter "title" is invalid: at most …' → "The title: at most …". Others stay as they are.
 */
export function plainWords(label: string, message: string): string {
  const rest = message.replace(/^The parameter "[^"]*" /, '')
  if (rest === message) return message
  if (rest.startsWith('is invalid: ')) return `${label}: ${rest.slice('is invalid: '.length)}`
  return `${label} ${rest.replace(/^is required\.$/, 'is needed.')}`
}
