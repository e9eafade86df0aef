// What an import makes of another tool's cells: its moments (dates), its tags folded to linkbox's, and a row's
// date, title and tags checked against their columns (the first problem is the row's).
import { MAX_TAG_LENGTH, MAX_TAGS, MAX_TITLE_LENGTH, TITLE_CONTROLS } from './validate'

/** One link to make, as read from a file. */
export interface ImportRow {
  line: number
  code: string
  long_url: string
  mode?: string
  /** Unix ms; null: none; undefined: none given; NaN: not a date. */
  expiresAt?: number | null
  /** Tags folded to linkbox's alphabet, comma-separated. */
  tags?: string
  /** linkbox's own export: the visit limit ("" or absent: none). */
  max_visits?: string
  /** When the link was made (unix ms; absent: now), from the file's own column. */
  created?: number
  title?: string
  /** linkbox's own export: its redirect rules and A/B split as the API's JSON ("" or absent: none). */
  rules?: string
  split?: string
  /** The short domain's host (linkbox's and Shlink's domain column; "" or absent: the default domain). */
  domain?: string
  /** linkbox's own export: where it goes once expired or used up (absent: none). */
  expired_url?: string
  /** linkbox's own export said the link had a password: it cannot come back (the export never holds it). */
  hadPassword?: boolean
  /** Why the row cannot be kept as written (reason and message naming the column); it is skipped. */
  problem?: { reason: string; message: string }
}

/** A creation date may be this far ahead of the clock (another machine's clock), no further. */
export const CREATED_SKEW_MS = 5 * 60_000

const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
const MOMENT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?)?\s*(Z|UTC|[+-]\d{2}:?\d{2})?$/i

/**
 * A moment written by another tool: ISO 8601, or "YYYY-MM-DD HH:MM:SS" (UTC, as Kutt and YOURLS store it), a
 * real calendar date (no 31 April): unix ms; null for none; NaN for anything else.
 */
export function moment(text: string): number | null {
  if (text === '' || text.toLowerCase() === 'null') return null
  const m = MOMENT.exec(text)
  if (!m) return Number.NaN
  const [y, mo, d, h = 0, mi = 0, s = 0] = m
    .slice(1, 7)
    .map((v) => (v === undefined ? undefined : Number(v))) as number[]
  const leap = y! % 4 === 0 && (y! % 100 !== 0 || y! % 400 === 0)
  if (mo! < 1 || mo! > 12 || d! < 1 || d! > (mo === 2 && !leap ? 28 : DAYS[mo! - 1]!) || h > 23 || mi > 59 || s > 59)
    return Number.NaN
  const zone = m[8]?.toUpperCase() ?? 'Z'
  const offset =
    zone === 'Z' || zone === 'UTC'
      ? 0
      : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(-2))) * 60_000
  const ms = Date.UTC(y!, mo! - 1, d!, h, mi, s) + Math.floor(Number(m[7] ?? 0) * 1000) - offset
  return y! < 100 ? Number.NaN : ms
}

/**
 * Another tool's tags made into linkbox tags where that is faithful: letters with accents lose them (NFKD,
 * combining marks dropped: "ünïcode" is "unicode"), upper case is lowered, spaces become "-". A tag that
 * still is not 1-32 of [a-z0-9_-] ("Ελλάδα", "a/b"), or more than 10 tags, is a problem naming it.
 */
export function foldTags(list: string[], column: string): { tags: string; problem?: ImportRow['problem'] } {
  const out = new Set<string>()
  for (const raw of list) {
    const written = raw.trim()
    if (written === '') continue
    const tag = written
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .replace(/\s+/g, '-')
    if (!/^[a-z0-9_-]+$/.test(tag) || tag.length > MAX_TAG_LENGTH) {
      const why =
        tag.length > MAX_TAG_LENGTH
          ? `longer than ${MAX_TAG_LENGTH} characters`
          : 'not made of letters, digits, _ and - (not even without accents)'
      return {
        tags: '',
        problem: {
          reason: 'invalid_tag',
          message: `The tag "${written.slice(0, 40)}" in the column "${column}" is ${why}.`,
        },
      }
    }
    out.add(tag)
  }
  if (out.size > MAX_TAGS)
    return {
      tags: '',
      problem: { reason: 'invalid_tag', message: `The column "${column}" has ${out.size} tags: at most ${MAX_TAGS}.` },
    }
  return { tags: [...out].join(',') }
}

/** The date, title and tags of a row, each checked against its column; the first problem is the row's. */
export function kept(c: {
  created: string
  createdColumn: string
  title: string
  titleColumn: string
  tags: string[]
  tagsColumn: string
}) {
  const row: Pick<ImportRow, 'created' | 'title' | 'tags' | 'problem'> = {}
  const at = moment(c.created.trim())
  if (at !== null) {
    if (Number.isNaN(at) || at < 0)
      row.problem = {
        reason: 'invalid_created',
        message: `The column "${c.createdColumn}" is not a date (ISO 8601, or YYYY-MM-DD HH:MM:SS in UTC) from 1970 on: "${c.created.slice(0, 40)}".`,
      }
    else if (at > Date.now() + CREATED_SKEW_MS)
      row.problem = {
        reason: 'invalid_created',
        message: `The column "${c.createdColumn}" is in the future: "${c.created.slice(0, 40)}".`,
      }
    else row.created = at
  }
  if (c.title !== '') {
    if (TITLE_CONTROLS.test(c.title))
      row.problem ??= { reason: 'invalid_title', message: `The column "${c.titleColumn}" holds control characters.` }
    else if ([...c.title].length > MAX_TITLE_LENGTH)
      row.problem ??= {
        reason: 'invalid_title',
        message: `The column "${c.titleColumn}" holds ${[...c.title].length} characters: a title is at most ${MAX_TITLE_LENGTH}.`,
      }
    else row.title = c.title
  }
  const tags = foldTags(c.tags, c.tagsColumn)
  if (tags.problem) row.problem ??= tags.problem
  else if (tags.tags) row.tags = tags.tags
  return row
}
