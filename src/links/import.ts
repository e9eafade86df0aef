// Links in from a file (SPEC §2a), each row created through the link service as getLink.json would; read as a
// stream twice (count, then make) in batches, one import per account at a time (design notes: links).
import { randomUUID } from 'node:crypto'
import type { Caller } from '../kernel/caller'
import { AppError } from '../kernel/errors'
import { detectFormat } from './import-detect'
import { importRows, refused, rowCounts, type ImportFormat, type ImportRow } from './import-formats'
import type { LinkService } from './service'
import { IMPORTED_CODES_MAX } from './service-inputs'
import { MAX_EXPIRE } from './validate'

export { IMPORT_FORMATS, type ImportFormat, type ImportRow } from './import-formats'
export { detectFormat } from './import-detect'

/** The format recognised from the file's header row, or a 400 naming "file" that says to choose one. */
export function recognisedFormat(text: string): ImportFormat {
  const format = detectFormat(text)
  if (format) return format
  throw refused(
    'is not recognised from its header row as any format linkbox imports (linkbox, Shlink, Kutt, YOURLS, Bitly): choose its format',
  )
}
/** The largest file taken (SPEC §2a). */
export const MAX_IMPORT_BYTES = 10 * 1024 * 1024
/** Skipped rows listed in an answer; past that they are only counted. */
export const SKIPPED_LISTED = 1000
/** links.import_max_rows when the config does not say. */
export const DEFAULT_IMPORT_MAX_ROWS = 50_000
/** Rows handed to the service at once (one transaction of its write group), between two turns of the event loop. */
const BATCH = 100
/** The count runs this long at most before it lets the event loop turn, looking at the time every COUNT_SLICE records. */
const SLICE_MS = 4
const COUNT_SLICE = 2_000
/** The import lock's lease, renewed at every batch: a node that dies mid-import frees the account after it. */
export const IMPORT_LEASE_MS = 60_000

export interface Skipped {
  line: number
  code: string
  /** A machine code: alias_taken, alias_reserved, invalid_alias, invalid_url, invalid_expire, invalid_created, … */
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
  /** Links made without the password their file said they had (linkbox's export never holds it); absent: none. */
  without_password?: number
}

export interface ImportOptions {
  /** links.import_max_rows: a file with more rows is refused whole (413). */
  maxRows: number
  clock?: () => number
}

/** A turn of the event loop: what is waiting (redirects) runs before the import goes on. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** The rows of a file, counted as a stream, a slice at a time; over `maxRows` the file is refused (413, naming "file"). */
async function countRows(text: string, format: ImportFormat, maxRows: number): Promise<number> {
  // The header (a file not of its format is refused here), then the rest only scanned, a slice at a time.
  importRows(text, format).next()
  let rows = 0
  let sliceStart = performance.now()
  for (rows of rowCounts(text, format, COUNT_SLICE)) {
    if (rows > maxRows)
      throw new AppError(
        413,
        'too_large',
        `The parameter "file" holds more than ${maxRows} rows (links.import_max_rows): split it into several files.`,
      )
    if (performance.now() - sliceStart > SLICE_MS) {
      await turn()
      sliceStart = performance.now()
    }
  }
  return rows
}

/**
 * Imports a file into `caller`'s account: one import at a time per account (429 with Retry-After while
 * another runs, on any node), the rows counted first (a file over `maxRows` rows, or not of its format, is
 * refused whole), then made BATCH at a time. Rows that cannot be made are skipped with the reason the
 * service gives, or the file's column that is wrong; the account's webhooks get one links.imported event.
 */
export async function importLinks(
  links: LinkService,
  caller: Caller,
  text: string,
  format: ImportFormat,
  opts: ImportOptions,
): Promise<ImportResult> {
  const clock = opts.clock ?? links.now
  const holder = randomUUID()
  await links.claimImport(caller, holder, IMPORT_LEASE_MS)
  const result: ImportResult = { created: 0, skipped: [], skipped_total: 0 }
  const codes: string[] = []
  let started = false
  try {
    if ((await countRows(text, format, opts.maxRows)) === 0) throw refused('holds no links (only a header, or nothing)')
    started = true
    let batch: ImportRow[] = []
    for (const row of importRows(text, format)) {
      batch.push(row)
      if (batch.length < BATCH) continue
      await createBatch(links, caller, batch, clock(), result, codes)
      batch = []
      if (!(await links.renewImport(caller, holder, IMPORT_LEASE_MS)))
        throw new AppError(
          503,
          'busy',
          'The import lost its lock (it ran longer than its lease): the rows made so far stay.',
        )
      await turn()
    }
    if (batch.length > 0) await createBatch(links, caller, batch, clock(), result, codes)
    return result
  } finally {
    // An import that made links is announced even when it stopped half way; a refused file made none.
    await links.finishImport(
      caller,
      holder,
      started ? { created: result.created, skipped: result.skipped_total, codes } : null,
    )
  }
}

/** Why a row read from a file cannot be made before the service sees it: its own problem, or an expiry out of range. */
function rowProblem(row: ImportRow, now: number): ImportRow['problem'] {
  if (
    row.expiresAt !== undefined &&
    row.expiresAt !== null &&
    (Number.isNaN(row.expiresAt) || row.expiresAt > now + MAX_EXPIRE * 1000 || row.expiresAt < 0)
  )
    row.problem ??= {
      reason: 'invalid_expire',
      message: 'The expiry must be a date (ISO 8601) at most 10 years from now.',
    }
  return row.problem
}

/**
 * What the link service is asked to make of a row. A domain that is not one of this service's (another tool's
 * host, an old name) puts the link on the default domain: a move to a new host keeps every link.
 */
const inputOf = (row: ImportRow, hosts: readonly string[]) => ({
  url: row.long_url,
  alias: row.code,
  mode: row.mode,
  tags: row.tags,
  max_visits: row.max_visits,
  title: row.title,
  rules: row.rules,
  split: row.split,
  domain: hosts.includes((row.domain ?? '').toLowerCase()) ? row.domain : '',
  expired_url: row.expired_url,
})

/** A refusal of one row as an import reports it (a row without a URL is missing_url). */
function refusal(err: unknown): { reason: string; message: string } {
  // Anything but a refusal of the row (the disk is full, the database is read-only) stops the import.
  if (!(err instanceof AppError) || err.status >= 500) throw err
  if (err.code === 'missing_parameter') return { reason: 'missing_url', message: 'The row has no destination URL.' }
  return { reason: err.code, message: err.message }
}

/** One row of a preview: what the import would do with it. */
export interface PreviewRow {
  line: number
  code: string
  long_url: string
  title: string
  tags: string
  /** Null: it would be made; else why it would be skipped. */
  skip: { reason: string; message: string } | null
  hadPassword: boolean
}

/**
 * The first `first` rows of a file as the import would treat them, checked by the same rules without writing
 * anything, and how many rows it has (refused whole as the import would refuse it). A code taken now, or
 * twice in these rows, is a skip; the import checks again when it writes.
 */
export async function previewImport(
  links: LinkService,
  text: string,
  format: ImportFormat,
  opts: ImportOptions & { first: number },
): Promise<{ total: number; rows: PreviewRow[] }> {
  const total = await countRows(text, format, opts.maxRows)
  if (total === 0) throw refused('holds no links (only a header, or nothing)')
  const now = (opts.clock ?? links.now)()
  const rows: PreviewRow[] = []
  const seen = new Set<string>()
  for (const row of importRows(text, format)) {
    if (rows.length >= opts.first) break
    let skip = rowProblem(row, now) ?? null
    if (!skip)
      skip = await links.check(inputOf(row, links.domains.hosts)).then(
        () => null,
        (err) => refusal(err),
      )
    // A code is unique per domain: the same code on two domains is two links.
    const place = `${inputOf(row, links.domains.hosts).domain}/${row.code}`
    if (!skip && row.code !== '' && seen.has(place))
      skip = { reason: 'alias_taken', message: `The alias "${row.code}" is already in use (by an earlier row).` }
    if (row.code !== '') seen.add(place)
    const { line, code, long_url } = row
    rows.push({
      line,
      code,
      long_url,
      title: row.title ?? '',
      tags: row.tags ?? '',
      skip,
      hadPassword: !!row.hadPassword,
    })
  }
  return { total, rows }
}

async function createBatch(
  links: LinkService,
  caller: Caller,
  batch: ImportRow[],
  now: number,
  result: ImportResult,
  codes: string[],
) {
  const skip = (row: ImportRow, reason: string, message: string) => {
    result.skipped_total++
    if (result.skipped.length < SKIPPED_LISTED) result.skipped.push({ line: row.line, code: row.code, reason, message })
  }
  // Rows refused by what was read are skipped here, without an error object each; the service's refusals
  // (thrown before its first await, while this map runs) carry no stack trace: 50,000 junk rows made 50,000
  // traces, and the server's memory grew by 170 MiB before they were collected.
  const traces = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  let created: Promise<unknown>[]
  try {
    created = batch.map((row) => {
      if (rowProblem(row, now)) return Promise.resolve(null)
      return links.create(inputOf(row, links.domains.hosts), caller, {
        ...(row.expiresAt !== undefined ? { expiresAt: row.expiresAt } : {}),
        ...(row.created !== undefined ? { createdAt: row.created } : {}),
        quiet: true,
      })
    })
  } finally {
    Error.stackTraceLimit = traces
  }
  const outcomes = (await Promise.allSettled(created)) as PromiseSettledResult<{ hex: string } | null>[]
  outcomes.forEach((o, i) => {
    const row = batch[i]!
    if (o.status === 'fulfilled') {
      if (o.value === null) return skip(row, row.problem!.reason, row.problem!.message)
      result.created++
      if (row.hadPassword) result.without_password = (result.without_password ?? 0) + 1
      if (codes.length < IMPORTED_CODES_MAX) codes.push(o.value.hex)
      return
    }
    const why = refusal(o.reason)
    skip(row, why.reason, why.message)
  })
}
