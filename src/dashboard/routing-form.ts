// The rules and split editor's fields (routing-editor.ts draws them) read back: rows from the form's numbered
// fields (rule_0_url, rule_0_country, …, split_0_weight), every row's problem at once in plain words, and
// the same JSON the API takes. Forms without the editor's fields still send the JSON (rules, split).
import {
  type Checked,
  CONDITIONS,
  DEVICES,
  type LinkRecord,
  MAX_RULES,
  MAX_SPLIT,
  MAX_WEIGHT,
  MIN_SPLIT,
} from '../links'
import { plainWords, withScheme } from './form-help'

export interface RuleRow {
  url: string
  device: string[]
  os: string[]
  country: string[]
  language: string[]
}
export interface SplitRow {
  url: string
  weight: string
}
export interface Routing {
  rules: RuleRow[]
  split: SplitRow[]
}

/** Rows read from a form, at most (more than MAX_RULES are told, not read). */
const MAX_ROWS = 40
const CONDITION_VALUES = 250
/** The editor's field names, for a draft kept while the session is lost (shell.requireForm). */
export const EDITOR_FIELDS = [
  'routing_editor',
  ...Array.from({ length: MAX_RULES }, (_, i) => [...CONDITIONS, 'url'].map((c) => `rule_${i}_${c}`)).flat(),
  ...Array.from({ length: MAX_SPLIT }, (_, i) => [`split_${i}_url`, `split_${i}_weight`]).flat(),
]

const blankRule = (r: RuleRow) => !r.url && CONDITIONS.every((c) => r[c].length === 0)

/** The rows a form sent (blank rows left out), or the JSON of a form without the editor read as rows. */
export function routingOf(f: URLSearchParams): Routing {
  if (!f.has('routing_editor')) return { rules: rulesFromJson(f.get('rules')), split: splitFromJson(f.get('split')) }
  const list = (name: string) =>
    f
      .getAll(name)
      .slice(0, CONDITION_VALUES)
      .map((v) => v.trim().slice(0, 64))
      .filter(Boolean)
  const rules: RuleRow[] = []
  const split: SplitRow[] = []
  for (let i = 0; i < MAX_ROWS; i++) {
    const rule: RuleRow = {
      url: (f.get(`rule_${i}_url`) ?? '').trim().slice(0, 4096),
      device: list(`rule_${i}_device`),
      os: list(`rule_${i}_os`),
      country: list(`rule_${i}_country`),
      language: list(`rule_${i}_language`),
    }
    if (!blankRule(rule)) rules.push(rule)
    const arm = {
      url: (f.get(`split_${i}_url`) ?? '').trim().slice(0, 4096),
      weight: (f.get(`split_${i}_weight`) ?? '').trim().slice(0, 12),
    }
    if (arm.url || arm.weight) split.push(arm)
  }
  return { rules, split }
}

/** Stored rules as the editor's rows. */
export const rulesRows = (rules: readonly Partial<RuleRow>[] | undefined): RuleRow[] =>
  (rules ?? []).map((r) => ({
    url: typeof r.url === 'string' ? r.url : '',
    device: Array.isArray(r.device) ? r.device.map(String) : [],
    os: Array.isArray(r.os) ? r.os.map(String) : [],
    country: Array.isArray(r.country) ? r.country.map(String) : [],
    language: Array.isArray(r.language) ? r.language.map(String) : [],
  }))
export const splitRows = (split: readonly { url?: unknown; weight?: unknown }[] | undefined): SplitRow[] =>
  (split ?? []).map((a) => ({ url: typeof a.url === 'string' ? a.url : '', weight: String(a.weight ?? '') }))

function parsedList(json: string | null): Record<string, unknown>[] {
  try {
    const v = JSON.parse(json ?? '')
    return Array.isArray(v) ? v.filter((i) => typeof i === 'object' && i !== null).slice(0, MAX_ROWS) : []
  } catch {
    return []
  }
}
const rulesFromJson = (json: string | null) => rulesRows(parsedList(json) as Partial<RuleRow>[])
const splitFromJson = (json: string | null) => splitRows(parsedList(json))

/** A link's rules and split as the edit form shows them. */
export const routingOfLink = (r: LinkRecord): Routing => ({ rules: rulesRows(r.rules), split: splitRows(r.split) })

/** The JSON the API stores for the rows ('' for none). */
export function routingJson(v: Routing): { rules: string; split: string } {
  const rules = v.rules.map((r) => {
    const rule: Record<string, unknown> = { url: r.url }
    for (const c of CONDITIONS) if (r[c].length) rule[c] = r[c]
    return rule
  })
  const split = v.split.map((a) => ({ url: a.url, weight: /^\d{1,3}$/.test(a.weight) ? Number(a.weight) : a.weight }))
  return { rules: rules.length ? JSON.stringify(rules) : '', split: split.length ? JSON.stringify(split) : '' }
}

export type Problems = (values: readonly Checked[]) => Map<string, { message: string }>

/**
 * Every problem of the rows at once, keyed by field id (rule_2_url, split_0_weight, rules, split), in plain
 * words naming the row; the rows' addresses get https:// when typed without it (listed in `fixed`).
 */
export function routingProblems(v: Routing, problems: Problems): { errors: Record<string, string>; fixed: string[] } {
  const errors: Record<string, string> = {}
  const fixed: string[] = []
  const urls: Checked[] = []
  const labels = new Map<string, string>()
  const destination = (row: { url: string }, key: string, label: string, missing: string) => {
    if (!row.url) return void (errors[key] = missing)
    const url = withScheme(row.url)
    if (url !== row.url) fixed.push(row.url)
    row.url = url
    urls.push({ key, param: 'url', value: url })
    labels.set(key, label)
  }
  if (v.rules.length > MAX_RULES) errors.rules = `At most ${MAX_RULES} rules; there are ${v.rules.length}.`
  v.rules.forEach((r, k) => {
    const n = k + 1
    destination(
      r,
      `rule_${k}_url`,
      `Rule ${n}: the destination`,
      `Rule ${n}: type the address to send these visitors to.`,
    )
    if (CONDITIONS.every((c) => r[c].length === 0))
      errors[`rule_${k}`] =
        `Rule ${n}: choose at least one device, system, country or language (a rule without one would take every visitor).`
    if (r.device.some((d) => !(DEVICES as readonly string[]).includes(d)))
      errors[`rule_${k}_device`] = `Rule ${n}: a device is one of ${DEVICES.join(', ')}.`
    if (r.country.some((c) => !/^[A-Za-z]{2}$/.test(c)))
      errors[`rule_${k}_country`] = `Rule ${n}: choose countries from the list.`
    if (r.language.some((c) => !/^[A-Za-z]{1,8}$/.test(c)))
      errors[`rule_${k}_language`] = `Rule ${n}: choose languages from the list.`
    if (r.os.some((c) => !/^[\p{L}\p{N} ._()/+-]{1,64}$/u.test(c)))
      errors[`rule_${k}_os`] = `Rule ${n}: choose systems from the list.`
  })
  const count = v.split.length
  if (count > 0 && (count < MIN_SPLIT || count > MAX_SPLIT))
    errors.split = `A split shares visitors between ${MIN_SPLIT} and ${MAX_SPLIT} destinations; there ${count === 1 ? 'is 1' : `are ${count}`}. Leave every row empty for no split.`
  v.split.forEach((a, k) => {
    const n = k + 1
    destination(a, `split_${k}_url`, `Destination ${n}`, `Destination ${n}: type its address.`)
    const w = Number(a.weight)
    if (!/^\d{1,3}$/.test(a.weight) || w < 1 || w > MAX_WEIGHT)
      errors[`split_${k}_weight`] = `Destination ${n}: the weight is a whole number from 1 to ${MAX_WEIGHT}.`
  })
  for (const [key, err] of problems(urls)) errors[key] = plainWords(labels.get(key)!, err.message)
  return { errors, fixed }
}

/** The weights' total and each one's share in whole percent ('' for a weight that is not a number). */
export function shares(split: readonly SplitRow[]): { total: number; percent: string[] } {
  const weights = split.map((a) => (/^\d{1,3}$/.test(a.weight) ? Number(a.weight) : 0))
  const total = weights.reduce((s, w) => s + w, 0)
  return { total, percent: weights.map((w) => (w && total ? `${Math.round((w * 100) / total)} %` : '')) }
}
