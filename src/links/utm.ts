// UTM parameters (SPEC §2a): utm_source … utm_content set in a destination's query. Only the named parameters
// are touched: the rest of the query stays as written, in its order, and the fragment stays after it.
import { AppError } from '../kernel/errors'
import { type UrlRules, validateUrl } from './validate'

export const UTM_PARAMS = ['utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content'] as const
export type UtmParam = (typeof UTM_PARAMS)[number]
/** The values to set: a string sets the parameter, '' removes it (absent: left as the URL has it). */
export type UtmValues = Partial<Record<UtmParam, string>>
export const MAX_UTM_LENGTH = 200
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/

/** One UTM value as sent: 0-200 characters (code points), no control characters; '' is kept (it removes). */
export function validateUtm(value: unknown, name: UtmParam): string {
  if (typeof value !== 'string')
    throw new AppError(400, 'invalid_parameter', `The parameter "${name}" must be a string.`)
  if (CONTROLS.test(value))
    throw new AppError(400, 'invalid_parameter', `The parameter "${name}" is invalid: no control characters.`)
  if (value.length > MAX_UTM_LENGTH && [...value].length > MAX_UTM_LENGTH)
    throw new AppError(
      400,
      'invalid_parameter',
      `The parameter "${name}" is invalid: at most ${MAX_UTM_LENGTH} characters (it has ${[...value].length}).`,
    )
  return value
}

/**
 * The UTM values of an input, validated: on create '' and null are "not given" (nothing to set), on update ''
 * removes the parameter; null when none is given.
 */
export function utmOf(input: Partial<Record<UtmParam, unknown>>, onUpdate: boolean): UtmValues | null {
  let values: UtmValues | null = null
  for (const name of UTM_PARAMS) {
    const v = input[name]
    if (v === undefined || v === null || (v === '' && !onUpdate)) continue
    values ??= {}
    values[name] = validateUtm(v, name)
  }
  return values
}

/** A query part's name or value as text: '+' is a space, a broken %-escape is kept as written. */
function decodePart(part: string): string {
  const spaced = part.replace(/\+/g, ' ')
  try {
    return decodeURIComponent(spaced)
  } catch {
    return spaced
  }
}

/** A value as a query writes it: %20 for a space, and ' escaped too (as the URL parser would). */
const encodeValue = (v: string) => encodeURIComponent(v).replace(/'/g, '%27')

/** The URL cut into what comes before its query, the query's pieces (no '?') and the fragment ('#…' or ''). */
function split(url: string): { head: string; pieces: string[]; fragment: string; hadQuery: boolean } {
  const hash = url.indexOf('#')
  const fragment = hash < 0 ? '' : url.slice(hash)
  const rest = hash < 0 ? url : url.slice(0, hash)
  const q = rest.indexOf('?')
  if (q < 0) return { head: rest, pieces: [], fragment, hadQuery: false }
  const query = rest.slice(q + 1)
  return { head: rest.slice(0, q), pieces: query === '' ? [] : query.split('&'), fragment, hadQuery: true }
}

const nameOf = (piece: string) => {
  const eq = piece.indexOf('=')
  return decodePart(eq < 0 ? piece : piece.slice(0, eq))
}

/**
 * The URL with the given UTM parameters set: one of the same name is replaced where it stands (further ones of
 * that name dropped), a new one added at the end in UTM_PARAMS' order, '' removes every one of that name.
 * Everything else is kept as written.
 */
export function mergeUtm(url: string, values: UtmValues): string {
  const { head, pieces, fragment, hadQuery } = split(url)
  const placed = new Set<string>()
  const out: string[] = []
  for (const piece of pieces) {
    const name = nameOf(piece)
    const value = Object.hasOwn(values, name) ? values[name as UtmParam] : undefined
    if (value === undefined) {
      out.push(piece)
      continue
    }
    if (value === '' || placed.has(name)) continue
    placed.add(name)
    out.push(`${name}=${encodeValue(value)}`)
  }
  for (const name of UTM_PARAMS) {
    const value = values[name]
    if (value !== undefined && value !== '' && !placed.has(name)) out.push(`${name}=${encodeValue(value)}`)
  }
  const query = out.length ? `?${out.join('&')}` : hadQuery && pieces.length === 0 ? '?' : ''
  return head + query + fragment
}

/** The UTM values a URL carries (the first of each name), '' for those it has not. */
export function utmValuesOf(url: string): Record<UtmParam, string> {
  const found = { utm_source: '', utm_medium: '', utm_campaign: '', utm_term: '', utm_content: '' }
  const seen = new Set<string>()
  for (const piece of split(url).pieces) {
    const name = nameOf(piece)
    if (!Object.hasOwn(found, name) || seen.has(name)) continue
    seen.add(name)
    const eq = piece.indexOf('=')
    found[name as UtmParam] = eq < 0 ? '' : decodePart(piece.slice(eq + 1))
  }
  return found
}

/**
 * A validated destination with the UTM values set, validated again (the url rules of SPEC §2: its length); a
 * destination the values make too long is refused naming the first of them.
 */
export function applyUtm(url: string, values: UtmValues, rules: UrlRules): string {
  try {
    return validateUrl(mergeUtm(url, values), rules)
  } catch (err) {
    const first = UTM_PARAMS.find((n) => values[n] !== undefined)
    if (!(err instanceof AppError) || !first) throw err
    throw new AppError(
      400,
      'invalid_parameter',
      `The parameter "${first}" is invalid: with the UTM parameters set, the destination ${err.message.replace(/^The parameter "url" /, '').replace(/\.$/, '')}.`,
    )
  }
}
