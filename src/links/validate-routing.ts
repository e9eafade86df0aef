// The rules of a link's routing fields (SPEC §2a): the visit limit, redirect rules and A/B splits, as pure
// functions that return the clean value or throw an AppError naming the parameter and the place.
import { AppError } from '../kernel/errors'
import { type UrlRules, validateUrl } from './validate'

export const MAX_VISITS = 1_000_000_000
export const MAX_RULES = 20
export const MIN_SPLIT = 2
export const MAX_SPLIT = 10
export const MAX_WEIGHT = 100
/** Values one condition may list (every country there is fits). */
export const MAX_CONDITION_VALUES = 250
/** The text of rules or of a split, at most (both fit in one /api body of 64 KiB). */
export const MAX_JSON_CHARS = 30_000
export const DEVICES = ['desktop', 'mobile', 'tablet', 'other'] as const
/** Systems as statistics name them (ua-parser-js), offered by the dashboard's picker; others may be sent too. */
export const OS_NAMES = ['Android', 'iOS', 'Windows', 'Mac OS', 'Linux', 'Chromium OS', 'Ubuntu', 'HarmonyOS'] as const
export const CONDITIONS = ['device', 'os', 'country', 'language'] as const
export type Condition = (typeof CONDITIONS)[number]

/** A rule as stored and answered: its destination and the conditions it gives (each a non-empty list). */
export interface Rule {
  url: string
  device?: string[]
  os?: string[]
  country?: string[]
  language?: string[]
}
export interface SplitArm {
  url: string
  weight: number
}

/** The visit limit, or null for none: 0 and "" (on update: removes it) are none. */
export function validateMaxVisits(value: unknown, name = 'max_visits'): number | null {
  const fail = () => {
    throw new AppError(
      400,
      'invalid_parameter',
      `The parameter "${name}" must be a whole number of visits from 1 to ${MAX_VISITS} (0 or empty: no limit).`,
    )
  }
  let n: number
  if (typeof value === 'number') n = value
  else if (typeof value === 'string' && /^\d{0,10}$/.test(value)) n = value === '' ? 0 : Number(value)
  else return fail()
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_VISITS) fail()
  return n === 0 ? null : n
}

/** The JSON array a rules or split parameter carries (a string; an array already parsed is taken too). */
function jsonArray(value: unknown, name: string, what: string): unknown[] {
  let parsed = value
  if (typeof value === 'string' && value.trim() === '') return [] // a form's blank field: none
  if (typeof value === 'string') {
    if (value.length > MAX_JSON_CHARS)
      throw new AppError(
        400,
        'invalid_parameter',
        `The parameter "${name}" is invalid: at most ${MAX_JSON_CHARS} characters of JSON.`,
      )
    try {
      parsed = JSON.parse(value)
    } catch {
      throw new AppError(
        400,
        'invalid_parameter',
        `The parameter "${name}" must be a JSON array of ${what}; it is not valid JSON.`,
      )
    }
  }
  if (!Array.isArray(parsed))
    throw new AppError(
      400,
      'invalid_parameter',
      `The parameter "${name}" must be a JSON array of ${what} ([] removes them).`,
    )
  return parsed
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** A rule's or an arm's URL, under the url rules of SPEC §2 (own origin, blocked domains), named by its place. */
function itemUrl(value: unknown, where: string, rules: UrlRules, checkDestination?: (url: string) => void): string {
  if (value === undefined) throw new AppError(400, 'invalid_url', `The parameter "${where}" is required.`)
  const url = validateUrl(value, rules, where)
  try {
    checkDestination?.(url)
  } catch (err) {
    // The abuse check names "url"; here it is this rule's.
    if (err instanceof AppError)
      throw new AppError(err.status, err.code, err.message.replace('"url"', `"${where}"`), err.headers)
    throw err
  }
  return url
}

const CONDITION_RULES: Record<Condition, { rule: string; test: (v: string) => boolean; clean: (v: string) => string }> =
  {
    device: {
      rule: `one of ${DEVICES.join(', ')}`,
      test: (v) => (DEVICES as readonly string[]).includes(v.toLowerCase()),
      clean: (v) => v.toLowerCase(),
    },
    // Names as statistics give them ("iOS", "Android", "Windows", "Mac OS"), compared without letter case.
    os: {
      rule: 'an operating system as statistics name it (e.g. iOS, Android, Windows, Mac OS, Linux), 1 to 64 characters',
      test: (v) => /^[\p{L}\p{N} ._()/+-]{1,64}$/u.test(v) && v.trim() !== '',
      clean: (v) => v.trim(),
    },
    country: {
      rule: 'an ISO 3166-1 alpha-2 country code (two letters, e.g. DE)',
      test: (v) => /^[A-Za-z]{2}$/.test(v),
      clean: (v) => v.toUpperCase(),
    },
    language: {
      rule: 'a primary language tag (1 to 8 letters, e.g. de)',
      test: (v) => /^[A-Za-z]{1,8}$/.test(v),
      clean: (v) => v.toLowerCase(),
    },
  }

/**
 * Redirect rules as sent: a JSON array of at most MAX_RULES {url, device?, os?, country?, language?}, each
 * giving at least one condition (a rule without any would take every visitor, so the rules after it and
 * the default could never be reached), each condition a non-empty list. [] is none. A refusal names the
 * place: "rules[2].country[0]".
 */
export function validateRules(
  value: unknown,
  rules: UrlRules,
  checkDestination?: (url: string) => void,
  name = 'rules',
): Rule[] {
  const items = jsonArray(value, name, 'rules {"url", "device"?, "os"?, "country"?, "language"?}')
  const fail = (where: string, rule: string): never => {
    throw new AppError(400, 'invalid_parameter', `The parameter "${name}" is invalid: ${where} ${rule}.`)
  }
  if (items.length > MAX_RULES) fail(name, `has ${items.length} rules; at most ${MAX_RULES}`)
  return items.map((item, i) => {
    const at = `${name}[${i}]`
    if (!isPlainObject(item)) return fail(at, 'must be an object {"url", "device"?, "os"?, "country"?, "language"?}')
    for (const k of Object.keys(item))
      if (k !== 'url' && !(CONDITIONS as readonly string[]).includes(k))
        fail(`${at}.${k.slice(0, 40)}`, `is not a field of a rule (url, ${CONDITIONS.join(', ')})`)
    const rule: Rule = { url: itemUrl(item.url, `${at}.url`, rules, checkDestination) }
    for (const c of CONDITIONS) {
      const list = item[c]
      if (list === undefined) continue
      const { rule: text, test, clean } = CONDITION_RULES[c]
      if (!Array.isArray(list) || list.length === 0)
        fail(`${at}.${c}`, `must be a non-empty list of values, each ${text}`)
      const values = list as unknown[]
      if (values.length > MAX_CONDITION_VALUES) fail(`${at}.${c}`, `must list at most ${MAX_CONDITION_VALUES} values`)
      values.forEach((v, j) => {
        if (typeof v !== 'string' || !test(v)) fail(`${at}.${c}[${j}]`, `must be ${text}`)
      })
      rule[c] = [...new Set((values as string[]).map(clean))]
    }
    if (!CONDITIONS.some((c) => rule[c]))
      fail(
        at,
        `must give at least one condition (${CONDITIONS.join(', ')}); the link's own url is the destination when no rule matches`,
      )
    return rule
  })
}

/** An A/B split as sent: a JSON array of MIN_SPLIT to MAX_SPLIT {url, weight 1-100}. [] is none. */
export function validateSplit(
  value: unknown,
  rules: UrlRules,
  checkDestination?: (url: string) => void,
  name = 'split',
): SplitArm[] {
  const items = jsonArray(value, name, 'destinations {"url", "weight"}')
  const fail = (where: string, rule: string): never => {
    throw new AppError(400, 'invalid_parameter', `The parameter "${name}" is invalid: ${where} ${rule}.`)
  }
  if (items.length === 0) return []
  if (items.length < MIN_SPLIT || items.length > MAX_SPLIT)
    fail(name, `has ${items.length} destinations; a split has ${MIN_SPLIT} to ${MAX_SPLIT} ([] removes it)`)
  return items.map((item, i) => {
    const at = `${name}[${i}]`
    if (!isPlainObject(item)) return fail(at, 'must be an object {"url", "weight"}')
    for (const k of Object.keys(item))
      if (k !== 'url' && k !== 'weight') fail(`${at}.${k.slice(0, 40)}`, 'is not a field of a split (url, weight)')
    const url = itemUrl(item.url, `${at}.url`, rules, checkDestination)
    const w = item.weight
    if (typeof w !== 'number' || !Number.isInteger(w) || w < 1 || w > MAX_WEIGHT)
      fail(`${at}.weight`, `must be a whole number from 1 to ${MAX_WEIGHT}`)
    return { url, weight: w as number }
  })
}
