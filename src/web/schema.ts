// Method parameters declared once as JSON Schemas (TypeBox), checked by a small interpreter of exactly the
// keywords they use, with JSON Schema's meaning (code points, Unicode patterns): what the document promises.
import type { TSchema } from '@sinclair/typebox'
import { AppError, missingParameter } from '../kernel/errors'
import type { Params } from './params'

export interface ApiParam {
  name: string
  /** The value's schema, with `description` and `examples` for the documents. */
  schema: TSchema
  required?: boolean
  /** Values that mean "not given" (the default applies): a blank form field "", and null in a JSON body. */
  absent?: readonly ('' | null)[]
  /** Enum members match in any letter case ("SVG" is svg); the schema lists the canonical spelling. */
  caseInsensitive?: boolean
  /**
   * What a value that breaks the schema gets: a 400 with this machine code and the message for the first
   * keyword it breaks (checked in the order type, enum, minLength, maxLength, pattern, format, minimum,
   * maximum), else `default`. They are the services' own messages, which name the parameter.
   */
  error: { code: string; messages: { default: string } & Partial<Record<Keyword, string>> }
}

const KEYWORDS = ['type', 'enum', 'minLength', 'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'anyOf'] as const
type Keyword = (typeof KEYWORDS)[number]
/** Keywords that only describe. */
const ANNOTATIONS = new Set(['description', 'examples', 'default', 'title', 'deprecated'])
const TYPES = new Set(['string', 'integer', 'boolean', 'null'])
const FORMATS = new Set(['date'])

/** Throws (at start-up) when a parameter's schema uses a keyword the check does not implement. */
export function assertCheckable(schema: TSchema, where: string): void {
  for (const [k, v] of Object.entries(schema)) {
    if (ANNOTATIONS.has(k)) continue
    if (!(KEYWORDS as readonly string[]).includes(k)) throw new Error(`${where}: the keyword "${k}" is not checked`)
    if (k === 'type' && !TYPES.has(v as string)) throw new Error(`${where}: type "${String(v)}" is not checked`)
    if (k === 'format' && !FORMATS.has(v as string)) throw new Error(`${where}: format "${String(v)}" is not checked`)
    if (k === 'anyOf') (v as TSchema[]).forEach((s, i) => assertCheckable(s, `${where}.anyOf[${i}]`))
  }
}

const patterns = new Map<string, RegExp>()
function pattern(source: string): RegExp {
  let re = patterns.get(source)
  if (!re) patterns.set(source, (re = new RegExp(source, 'u')))
  return re
}

/** A real calendar day written YYYY-MM-DD (the "date" format of JSON Schema, RFC 3339 full-date). */
function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s)
  if (!m) return false
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]
  return days !== undefined && d >= 1 && d <= days
}

function typeOk(type: string, v: unknown): boolean {
  if (type === 'string') return typeof v === 'string'
  if (type === 'integer') return typeof v === 'number' && Number.isInteger(v)
  if (type === 'boolean') return typeof v === 'boolean'
  return v === null
}

/** The first keyword of `schema` that `value` breaks, or null when it is valid. */
export function violation(schema: TSchema, value: unknown): Keyword | null {
  const s = schema as Record<string, any>
  if (s.anyOf) return (s.anyOf as TSchema[]).some((b) => violation(b, value) === null) ? null : 'anyOf'
  if (s.type !== undefined && !typeOk(s.type, value)) return 'type'
  if (s.enum && !(s.enum as unknown[]).includes(value)) return 'enum'
  if (typeof value === 'string') {
    if (s.minLength !== undefined || s.maxLength !== undefined) {
      // Lengths count code points, which lie between half the UTF-16 units and all of them: counted (an
      // array of the characters) only when those bounds do not settle it, as they do for nearly every value.
      const settled =
        (s.minLength === undefined || Math.ceil(value.length / 2) >= s.minLength) &&
        (s.maxLength === undefined || value.length <= s.maxLength)
      if (!settled) {
        const length = [...value].length
        if (s.minLength !== undefined && length < s.minLength) return 'minLength'
        if (s.maxLength !== undefined && length > s.maxLength) return 'maxLength'
      }
    }
    if (s.pattern !== undefined && !pattern(s.pattern).test(value)) return 'pattern'
    if (s.format === 'date' && !isDate(value)) return 'format'
  }
  if (typeof value === 'number') {
    if (s.minimum !== undefined && value < s.minimum) return 'minimum'
    if (s.maximum !== undefined && value > s.maximum) return 'maximum'
  }
  return null
}

/**
 * Query strings and forms carry only text: "60" stands for the integer 60 and "1" or "true" for true, as
 * the document's types promise. JSON bodies carry typed values, which are taken as they are.
 */
export function coerce(param: ApiParam, value: unknown): unknown {
  if (typeof value !== 'string') return value
  const s = param.schema as Record<string, any>
  if (s.type === 'integer' && /^[0-9]{1,15}$/.test(value)) return Number(value)
  if (s.type === 'boolean') {
    if (value === '1' || value === 'true') return true
    if (value === '0' || value === 'false') return false
  }
  if (param.caseInsensitive && Array.isArray(s.enum)) {
    const lower = value.toLowerCase()
    return (s.enum as unknown[]).find((m) => typeof m === 'string' && m.toLowerCase() === lower) ?? value
  }
  return value
}

export const isAbsent = (param: ApiParam, value: unknown) =>
  value === undefined || (param.absent ?? []).includes(value as '' | null)

/**
 * The first gate of every method: a required parameter that is absent → 400 missing_parameter; a value
 * that breaks its schema → 400 with the parameter's own code and message. Parameters are checked in the
 * order they are declared (the order the services check them in). The handler still gets the values as
 * sent: the services keep their own rules (own-origin URLs, reserved aliases, QR capacity, …).
 */
export function checkParams(declared: readonly ApiParam[], given: Params): void {
  for (const p of declared) {
    const value = given[p.name]
    if (isAbsent(p, value)) {
      if (p.required) throw missingParameter(p.name)
      continue
    }
    const broken = violation(p.schema, coerce(p, value))
    if (broken) throw new AppError(400, p.error.code, p.error.messages[broken] ?? p.error.messages.default)
  }
}
