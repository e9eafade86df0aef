// Links in from a file (SPEC §2a): linkbox's own export, or what Shlink, Kutt, YOURLS and Bitly give their
// users. Each format is read into the same rows (code, destination, mode, expiry, tags), and each row is
// created through the link service, as getLink.json would: the same URL rules and abuse checks, the same
// alias rules, webhooks and events. A code is kept when it is free and valid here; a taken, reserved or
// invalid one skips its row, never overwrites. Rows go to the service a batch at a time, so that the
// service's write group commits a batch in one transaction (each link in its own savepoint, its code
// checked again inside it).
//
// Where each layout comes from (read from the peers' own code and documents):
// - shlink: the web client's "Export" button (shlink-web-component ExportShortUrlsBtn): createdAt, domain,
//   shortCode, shortUrl, longUrl, title, tags (joined with |), visits; also the shlink-importer CSV source's
//   headers (Long URL, Short code, Tags …), matched, as there, in any case and without spaces.
// - kutt: Kutt has no export; its API's list (GET /api/v2/links: {data: [{address, target, description,
//   expire_in, visit_count, created_at, …}], total, limit, skip}) saved to a file, which is how
//   shlink-importer reads Kutt too; a CSV with those column names works as well.
// - yourls: the yourls_url table (keyword, url, title, timestamp, ip, clicks) as database tools export it,
//   with or without its header row.
// - bitly: the links export of Bitly's web app: Link, Custom Link, Date created, Title, Destination URL,
//   Engagements, Status (a Tags column, when there is one, is read too).
import type { Caller } from '../accounts/service'
import { AppError } from '../errors'
import { CsvError, parseCsv, unneutralise, type CsvRecord } from './csv'
import type { LinkService } from './service'
import { MAX_EXPIRE, MAX_TAG_LENGTH, MAX_TAGS } from './validate'

export const IMPORT_FORMATS = ['csv', 'shlink', 'kutt', 'yourls', 'bitly'] as const
export type ImportFormat = (typeof IMPORT_FORMATS)[number]
/** The largest file taken (SPEC §2a). */
export const MAX_IMPORT_BYTES = 10 * 1024 * 1024
/** Skipped rows listed in an answer; past that they are only counted. */
export const SKIPPED_LISTED = 1000
/** Rows handed to the service at once (one transaction of its write group). */
const BATCH = 500

/** One link to make, as read from a file. */
export interface ImportRow {
  line: number
  code: string
  long_url: string
  mode?: string
  /** Unix ms; null: none; undefined: none given. */
  expiresAt?: number | null
  tags?: string
  /** linkbox's own export: the visit limit ("" or absent: none). */
  max_visits?: string
}

export interface Skipped {
  line: number
  code: string
  /** A machine code: alias_taken, alias_reserved, invalid_alias, invalid_url, invalid_expire, … */
  reason: string
  /** The same for people. */
  message: string
}

export interface ImportResult {
  created: number
  /** The first SKIPPED_LISTED rows that were not imported, in file order. */
  skipped: Skipped[]
  /** All rows not imported (may exceed the list). */
  skipped_total: number
}

const refused = (why: string) => new AppError(400, 'invalid_parameter', `The parameter "file" ${why}.`)

/** Header names compared without case, spaces, underscores and dashes ("Destination URL" is destinationurl). */
const key = (name: string) => name.toLowerCase().replace(/[\s_-]+/g, '')

function records(text: string): CsvRecord[] {
  try {
    return parseCsv(text)
  } catch (err) {
    if (err instanceof CsvError) throw refused(`is not CSV as RFC 4180 writes it: ${err.message}`)
    throw err
  }
}

/** The rows of a CSV with a header, as objects keyed by `key(header)`; `required` columns must be there. */
function table(recs: CsvRecord[], required: string[], label: string) {
  const header = recs[0]
  if (!header) throw refused('holds no rows')
  const names = header.fields.map(key)
  for (const r of required) if (!names.includes(r)) throw refused(`is not a ${label} file: it has no "${r}" column (the header row has: ${header.fields.slice(0, 12).join(', ').slice(0, 300)})`)
  return recs.slice(1).map((rec) => {
    const row = new Map<string, string>()
    names.forEach((name, i) => {
      if (!row.has(name)) row.set(name, (rec.fields[i] ?? '').trim())
    })
    return { line: rec.line, get: (name: string) => row.get(name) ?? '' }
  })
}

/** A moment written by another tool: ISO 8601, or "YYYY-MM-DD HH:MM:SS" (taken as UTC, as Kutt and YOURLS store it). */
function moment(text: string): number | null | 'invalid' {
  if (text === '' || text.toLowerCase() === 'null') return null
  const spaced = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text) ? `${text.replace(' ', 'T')}Z` : text
  if (!/^\d{4}-\d{2}-\d{2}/.test(spaced)) return 'invalid'
  const ms = Date.parse(spaced)
  return Number.isNaN(ms) ? 'invalid' : ms
}

/**
 * Another tool's tags made into linkbox tags: lower case, spaces and other characters as "-", at most 32
 * characters, at most 10 (the first ones). Tags that come out empty are dropped.
 */
function foreignTags(list: string[]): string {
  const out = new Set<string>()
  for (const t of list) {
    const tag = t.trim().toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, MAX_TAG_LENGTH)
    if (tag) out.add(tag)
    if (out.size === MAX_TAGS) break
  }
  return [...out].join(',')
}

/** The path of a short URL as a code: "https://bit.ly/AbC" and "bit.ly/AbC" are "AbC". */
function codeOfShortUrl(url: string): string {
  const bare = url.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
  const slash = bare.indexOf('/')
  return slash < 0 ? '' : bare.slice(slash + 1).replace(/[?#].*$/, '').replace(/\/$/, '')
}

function linkboxRows(text: string): ImportRow[] {
  return table(records(text), ['longurl'], 'linkbox CSV').map((r) => {
    const expires = r.get('expires')
    const at = moment(expires)
    return {
      line: r.line,
      code: unneutralise(r.get('code')),
      long_url: r.get('longurl'),
      mode: r.get('mode') || undefined,
      expiresAt: at === 'invalid' ? Number.NaN : at,
      tags: unneutralise(r.get('tags')),
      max_visits: r.get('maxvisits') || undefined,
    }
  })
}

function shlinkRows(text: string): ImportRow[] {
  return table(records(text), ['longurl'], 'Shlink export').map((r) => ({
    line: r.line,
    code: r.get('shortcode'),
    long_url: r.get('longurl'),
    tags: foreignTags(r.get('tags').split('|')),
  }))
}

interface KuttLink {
  address?: unknown
  target?: unknown
  expire_in?: unknown
}

function kuttRows(text: string): ImportRow[] {
  const trimmed = text.replace(/^\uFEFF/, '').trimStart()
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let doc: unknown
    try {
      doc = JSON.parse(trimmed)
    } catch {
      throw refused('starts like JSON but is not valid JSON (a Kutt file is the answer of GET /api/v2/links)')
    }
    const list = Array.isArray(doc) ? doc : (doc as { data?: unknown })?.data
    if (!Array.isArray(list)) throw refused('is JSON without a "data" list of links (a Kutt file is the answer of GET /api/v2/links)')
    return list.map((item: KuttLink, i) => {
      const at = typeof item?.expire_in === 'string' ? moment(item.expire_in) : null
      return {
        // JSON has no lines: the link's place in the list, from 1.
        line: i + 1,
        code: typeof item?.address === 'string' ? item.address : '',
        long_url: typeof item?.target === 'string' ? item.target : '',
        expiresAt: at === 'invalid' ? Number.NaN : at,
      }
    })
  }
  return table(records(text), ['target'], 'Kutt').map((r) => {
    const at = moment(r.get('expirein'))
    return { line: r.line, code: r.get('address'), long_url: r.get('target'), expiresAt: at === 'invalid' ? Number.NaN : at }
  })
}

const YOURLS_COLUMNS = ['keyword', 'url', 'title', 'timestamp', 'ip', 'clicks']

function yourlsRows(text: string): ImportRow[] {
  const recs = records(text)
  // A dump without its header row has the table's columns in the table's order.
  if (recs[0] && !recs[0].fields.map(key).includes('url')) recs.unshift({ line: 0, fields: YOURLS_COLUMNS })
  return table(recs, ['keyword', 'url'], 'YOURLS').map((r) => ({ line: r.line, code: r.get('keyword'), long_url: r.get('url') }))
}

function bitlyRows(text: string): ImportRow[] {
  return table(records(text), ['link', 'destinationurl'], 'Bitly export').map((r) => ({
    line: r.line,
    code: codeOfShortUrl(r.get('customlink') || r.get('link')),
    long_url: r.get('destinationurl'),
    tags: foreignTags(r.get('tags').split(/[|,]/)),
  }))
}

/** The rows of a file in one of the formats; a file that is not of that format is refused (400, "file"). */
export function readImport(text: string, format: ImportFormat): ImportRow[] {
  const rows =
    format === 'shlink' ? shlinkRows(text)
    : format === 'kutt' ? kuttRows(text)
    : format === 'yourls' ? yourlsRows(text)
    : format === 'bitly' ? bitlyRows(text)
    : linkboxRows(text)
  if (rows.length === 0) throw refused('holds no links (only a header, or nothing)')
  return rows
}

/**
 * Creates the rows' links for `caller`, a batch at a time, through the link service. Rows that cannot be
 * made are skipped with the reason the service gives (an expiry that is not a date, or more than ten years
 * away, is invalid_expire).
 */
export async function importLinks(links: LinkService, caller: Caller, rows: ImportRow[], clock: () => number = Date.now): Promise<ImportResult> {
  const result: ImportResult = { created: 0, skipped: [], skipped_total: 0 }
  const skip = (row: ImportRow, reason: string, message: string) => {
    result.skipped_total++
    if (result.skipped.length < SKIPPED_LISTED) result.skipped.push({ line: row.line, code: row.code, reason, message })
  }
  for (let at = 0; at < rows.length; at += BATCH) {
    const batch = rows.slice(at, at + BATCH)
    const now = clock()
    const outcomes = await Promise.allSettled(
      batch.map((row) => {
        if (row.expiresAt !== undefined && row.expiresAt !== null && (Number.isNaN(row.expiresAt) || row.expiresAt > now + MAX_EXPIRE * 1000 || row.expiresAt < 0))
          return Promise.reject(new AppError(400, 'invalid_expire', 'The expiry must be a date (ISO 8601) at most 10 years from now.'))
        return links.create(
          { url: row.long_url, alias: row.code, mode: row.mode, tags: row.tags, max_visits: row.max_visits },
          caller,
          row.expiresAt !== undefined ? { expiresAt: row.expiresAt } : {},
        )
      }),
    )
    outcomes.forEach((o, i) => {
      if (o.status === 'fulfilled') return void result.created++
      const err = o.reason
      // Anything but a refusal of the row (the disk is full, the database is read-only) stops the import.
      if (!(err instanceof AppError) || err.status >= 500) throw err
      const row = batch[i]!
      if (err.code === 'missing_parameter') skip(row, 'missing_url', 'The row has no destination URL.')
      else skip(row, err.code, err.message)
    })
  }
  return result
}
