// Every field's problem at once, for forms that show each error beside its field (create and update still
// stop at the first): each value is checked under the rules of its parameter, on its own.
import { AppError } from '../kernel/errors'
import {
  type UrlRules,
  validateAlias,
  validateExpire,
  validateMode,
  validatePassword,
  validateTags,
  validateTitle,
  validateUrl,
} from './validate'
import { validateMaxVisits, validateRules, validateSplit } from './validate-routing'
import type { CreateLinkInput } from './service-inputs'
import { validateExpiredUrl } from './after-expiry'
import { applyUtm, UTM_PARAMS, type UtmParam, utmOf, validateUtm } from './utm'

/** The parameters a value can be checked as (a rule's or an arm's destination is a 'url'). */
export type CheckedParam =
  | 'url'
  | 'alias'
  | 'mode'
  | 'expire'
  | 'password'
  | 'tags'
  | 'max_visits'
  | 'title'
  | 'rules'
  | 'split'
  | 'expired_url'
  | UtmParam

/** One value to check: `key` names it in the answer (a form field), `param` says which rules apply. */
export interface Checked {
  key: string
  param: CheckedParam
  value: string
}

export function createChecker(urlRules: UrlRules, checkDestination?: (url: string) => void) {
  const url = (v: string) => {
    checkDestination?.(validateUrl(v, urlRules))
  }
  const rules: Record<CheckedParam, (v: string) => unknown> = {
    url,
    alias: (v) => validateAlias(v),
    mode: (v) => validateMode(v),
    expire: (v) => validateExpire(v),
    password: (v) => validatePassword(v, { allowEmpty: true }),
    tags: (v) => validateTags(v),
    max_visits: (v) => validateMaxVisits(v),
    title: (v) => validateTitle(v),
    rules: (v) => validateRules(v, urlRules, checkDestination),
    split: (v) => validateSplit(v, urlRules, checkDestination),
    expired_url: (v) => validateExpiredUrl(v, urlRules, checkDestination),
    ...(Object.fromEntries(UTM_PARAMS.map((n) => [n, (v: string) => validateUtm(v, n)])) as Record<
      UtmParam,
      (v: string) => string
    >),
  }
  /** The refusal of each value that breaks its rules, by key (none: an empty map). At most 100 values. */
  return function problems(values: readonly Checked[]): Map<string, AppError> {
    const found = new Map<string, AppError>()
    for (const { key, param, value } of values.slice(0, 100)) {
      try {
        rules[param](value)
      } catch (err) {
        if (!(err instanceof AppError)) throw err
        found.set(key, err)
      }
    }
    return found
  }
}

const present = (v: unknown) => v !== undefined && v !== null && v !== ''

/** Create's own checks (the first problem refused) and rules and split as stored: JSON text, null for none. */
export function createInputRules(urlRules: UrlRules, checkDestination?: (url: string) => void) {
  const rulesText = (value: unknown) => {
    const rules = validateRules(value, urlRules, checkDestination)
    return rules.length ? JSON.stringify(rules) : null
  }
  const splitText = (value: unknown) => {
    const split = validateSplit(value, urlRules, checkDestination)
    return split.length ? JSON.stringify(split) : null
  }
  /** A creation's input, validated as create does it (400s naming the parameter), before anything is written. */
  function checked(input: CreateLinkInput) {
    if (!present(input.url)) throw new AppError(400, 'missing_parameter', 'The parameter "url" is required.')
    const utm = utmOf(input, false)
    const given = validateUrl(input.url, urlRules)
    checkDestination?.(given)
    const long_url = utm ? applyUtm(given, utm, urlRules) : given
    return {
      long_url,
      alias: present(input.alias) ? validateAlias(input.alias) : null,
      mode: present(input.mode) ? validateMode(input.mode) : 'redirect',
      expire: present(input.expire) ? validateExpire(input.expire) : 0,
      tags: present(input.tags) ? validateTags(input.tags) : [],
      max_visits: present(input.max_visits) ? validateMaxVisits(input.max_visits) : null,
      rules: present(input.rules) ? rulesText(input.rules) : null,
      split: present(input.split) ? splitText(input.split) : null,
      title: present(input.title) ? validateTitle(input.title) : '',
      password: input.password !== undefined ? validatePassword(input.password, { allowEmpty: true }) : null,
      expired_url: present(input.expired_url)
        ? validateExpiredUrl(input.expired_url, urlRules, checkDestination)
        : null,
    }
  }
  /**
   * An update's destination (the url sent, with the UTM values sent set in it, or in `current` when only they
   * were sent) and its expired_url ('' removes it): only what was sent.
   */
  function destinationChanges(
    input: Omit<CreateLinkInput, 'url'> & { url?: unknown },
    current: string,
  ): { long_url?: string; expired_url?: string | null } {
    const changes: { long_url?: string; expired_url?: string | null } = {}
    if (input.url !== undefined) {
      changes.long_url = validateUrl(input.url, urlRules)
      checkDestination?.(changes.long_url)
    }
    const utm = utmOf(input, true)
    if (utm) changes.long_url = applyUtm(changes.long_url ?? current, utm, urlRules)
    if (input.expired_url !== undefined && input.expired_url !== null)
      changes.expired_url = validateExpiredUrl(input.expired_url, urlRules, checkDestination)
    return changes
  }
  return { rulesText, splitText, checked, destinationChanges }
}
