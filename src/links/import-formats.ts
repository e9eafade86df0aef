// The formats an import reads (SPEC §2a: linkbox, shlink, kutt, yourls, bitly), each a generator of rows so that
// an import holds one batch at a time; where each layout comes from: design notes, links.
import { AppError } from '../kernel/errors'
import { countCsvRecords, CsvError, csvRecords, unneutralise, type CsvRecord } from './csv'
import { type ImportRow, kept, moment } from './import-cells'

export type { ImportRow }

export const IMPORT_FORMATS = ['csv', 'shlink', 'kutt', 'yourls', 'bitly'] as const
export type ImportFormat = (typeof IMPORT_FORMATS)[number]

/** A CSV record has at most this many fields: a line of 5 million empty fields is not a link. */
const MAX_FIELDS = 200
/** A Kutt link (one element of its list) larger than this is skipped unread, not parsed into memory. */
const MAX_JSON_ITEM = 64 * 1024

export const refused = (why: string) => new AppError(400, 'invalid_parameter', `The parameter "file" ${why}.`)

/** Header names compared without case, spaces, underscores and dashes ("Destination URL" is destinationurl). */
const key = (name: string) => name.toLowerCase().replace(/[\s_-]+/g, '')

function* records(text: string): Generator<CsvRecord> {
  try {
    for (const rec of csvRecords(text)) {
      if (rec.fields.length > MAX_FIELDS)
        throw new CsvError(`line ${rec.line} has more than ${MAX_FIELDS} fields`, rec.line)
      yield rec
    }
  } catch (err) {
    if (err instanceof CsvError) throw refused(`is not CSV as RFC 4180 writes it: ${err.message}`)
    throw err
  }
}

interface Cells {
  line: number
  /** The cell trimmed ('' when the column is absent). */
  get(name: string): string
  /** The cell as written. */
  raw(name: string): string
  /** The column's name as the file's header writes it. */
  column(name: string): string
}

/** The records after a header, as cells keyed by `key(header)`; `required` columns must be there. */
function* table(recs: Iterator<CsvRecord>, required: string[], label: string, first?: CsvRecord): Generator<Cells> {
  const header = first ?? recs.next().value
  if (!header) throw refused('holds no rows')
  const names = header.fields.map(key)
  for (const r of required)
    if (!names.includes(r))
      throw refused(
        `is not a ${label} file: it has no "${r}" column (the header row has: ${header.fields.slice(0, 12).join(', ').slice(0, 300)})`,
      )
  const at = new Map<string, number>()
  names.forEach((name: string, i: number) => at.has(name) || at.set(name, i))
  for (let next = recs.next(); !next.done; next = recs.next()) {
    const fields = next.value.fields
    const raw = (name: string) => fields[at.get(name) ?? -1] ?? ''
    yield {
      line: next.value.line,
      raw,
      get: (name) => raw(name).trim(),
      column: (name) => header.fields[at.get(name) ?? -1] ?? name,
    }
  }
}

/** The path of a short URL as a code: "https://bit.ly/AbC" and "bit.ly/AbC" are "AbC". */
function codeOfShortUrl(url: string): string {
  const bare = url.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
  const slash = bare.indexOf('/')
  return slash < 0
    ? ''
    : bare
        .slice(slash + 1)
        .replace(/[?#].*$/, '')
        .replace(/\/$/, '')
}

function* linkboxRows(text: string): Generator<ImportRow> {
  for (const r of table(records(text), ['longurl'], 'linkbox CSV')) {
    yield {
      line: r.line,
      code: unneutralise(r.get('code')),
      long_url: r.get('longurl'),
      mode: r.get('mode') || undefined,
      expiresAt: moment(r.get('expires')),
      max_visits: r.get('maxvisits') || undefined,
      rules: r.get('rules') || undefined,
      split: r.get('split') || undefined,
      expired_url: r.get('expiredurl') || undefined,
      hadPassword: /^(yes|true|1)$/i.test(r.get('haspassword')),
      domain: r.get('domain'),
      ...kept({
        created: r.get('created'),
        createdColumn: r.column('created'),
        title: unneutralise(r.raw('title')),
        titleColumn: r.column('title'),
        tags: unneutralise(r.get('tags')).split(','),
        tagsColumn: r.column('tags'),
      }),
    }
  }
}

function* shlinkRows(text: string): Generator<ImportRow> {
  for (const r of table(records(text), ['longurl'], 'Shlink export')) {
    yield {
      line: r.line,
      code: r.get('shortcode'),
      long_url: r.get('longurl'),
      // Shlink names its default domain "DEFAULT" in some exports: linkbox's default domain then.
      domain: /^default$/i.test(r.get('domain')) ? '' : r.get('domain'),
      ...kept({
        created: r.get('createdat'),
        createdColumn: r.column('createdat'),
        title: r.raw('title'),
        titleColumn: r.column('title'),
        tags: r.get('tags').split('|'),
        tagsColumn: r.column('tags'),
      }),
    }
  }
}

const text = (v: unknown) => (typeof v === 'string' ? v : '')

/** Kutt's list: each link parsed alone, in order, from the text (see jsonItems). */
function* kuttJsonRows(doc: string): Generator<ImportRow> {
  let place = 0
  for (const item of jsonItems(doc)) {
    // JSON has no lines: the link's place in the list, from 1.
    const line = ++place
    if (item === null) {
      yield {
        line,
        code: '',
        long_url: '',
        problem: { reason: 'invalid_row', message: `The link is larger than ${MAX_JSON_ITEM / 1024} KiB.` },
      }
      continue
    }
    const o = (typeof item === 'object' && item ? item : {}) as Record<string, unknown>
    yield {
      line,
      code: text(o.address),
      long_url: text(o.target),
      expiresAt: moment(text(o.expire_in)),
      // Kutt's list says whether a link has a password, never the password.
      hadPassword: o.password === true,
      ...kept({
        created: text(o.created_at),
        createdColumn: 'created_at',
        title: text(o.description),
        titleColumn: 'description',
        tags: [],
        tagsColumn: '',
      }),
    }
  }
}

function* kuttRows(doc: string): Generator<ImportRow> {
  const trimmed = doc.replace(/^\uFEFF/, '').trimStart()
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) return yield* kuttJsonRows(trimmed)
  for (const r of table(records(doc), ['target'], 'Kutt')) {
    yield {
      line: r.line,
      code: r.get('address'),
      long_url: r.get('target'),
      expiresAt: moment(r.get('expirein')),
      ...kept({
        created: r.get('createdat'),
        createdColumn: r.column('createdat'),
        title: r.raw('description'),
        titleColumn: r.column('description'),
        tags: [],
        tagsColumn: '',
      }),
    }
  }
}

const YOURLS_COLUMNS = ['keyword', 'url', 'title', 'timestamp', 'ip', 'clicks']

function* yourlsRows(doc: string): Generator<ImportRow> {
  const recs = records(doc)
  const first = recs.next().value as CsvRecord | undefined
  // A dump without its header row has the table's columns in the table's order.
  const headless = !!first && !first.fields.map(key).includes('url')
  const all = headless
    ? (function* () {
        yield first!
        yield* recs
      })()
    : recs
  for (const r of table(all, ['keyword', 'url'], 'YOURLS', headless ? { line: 0, fields: YOURLS_COLUMNS } : first)) {
    yield {
      line: r.line,
      code: r.get('keyword'),
      long_url: r.get('url'),
      ...kept({
        created: r.get('timestamp'),
        createdColumn: r.column('timestamp'),
        title: r.raw('title'),
        titleColumn: r.column('title'),
        tags: [],
        tagsColumn: '',
      }),
    }
  }
}

function* bitlyRows(doc: string): Generator<ImportRow> {
  for (const r of table(records(doc), ['link', 'destinationurl'], 'Bitly export')) {
    yield {
      line: r.line,
      code: codeOfShortUrl(r.get('customlink') || r.get('link')),
      long_url: r.get('destinationurl'),
      ...kept({
        created: r.get('datecreated'),
        createdColumn: r.column('datecreated'),
        title: r.raw('title'),
        titleColumn: r.column('title'),
        tags: r.get('tags').split(/[|,]/),
        tagsColumn: r.column('tags'),
      }),
    }
  }
}

/**
 * How many rows `importRows` would give, counted cheaply and `slice` records at a time (each call of the
 * generator's next: the count so far): records scanned without being built, a Kutt list's items parsed one
 * at a time. A file that is not CSV (or JSON) is refused here as importRows refuses it.
 */
export function* rowCounts(doc: string, format: ImportFormat, slice: number): Generator<number> {
  const trimmed = format === 'kutt' ? doc.replace(/^\uFEFF/, '').trimStart() : ''
  let rows = 0
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    // Each item parsed (and dropped): one that is not JSON refuses the file here, before any link is made.
    for (const _ of jsonItems(trimmed)) if (++rows % slice === 0) yield rows
    return yield rows
  }
  // The header row is no row; a YOURLS dump may come without one (see yourlsRows).
  const first = records(doc).next().value as CsvRecord | undefined
  if (first && format === 'yourls' && !first.fields.map(key).includes('url')) rows++
  let at: { at: number; line: number } | null = { at: 0, line: 1 }
  let header = true
  while (at) {
    let counted: ReturnType<typeof countCsvRecords>
    try {
      counted = countCsvRecords(doc, at, slice, MAX_FIELDS)
    } catch (err) {
      if (err instanceof CsvError) throw refused(`is not CSV as RFC 4180 writes it: ${err.message}`)
      throw err
    }
    rows += counted.records - (header && counted.records > 0 ? 1 : 0)
    if (counted.records > 0) header = false
    at = counted.next
    yield rows
  }
}

/** The rows of a file in one of the formats, one at a time; a file that is not of that format is refused (400, "file"). */
export function importRows(doc: string, format: ImportFormat): Generator<ImportRow> {
  return format === 'shlink'
    ? shlinkRows(doc)
    : format === 'kutt'
      ? kuttRows(doc)
      : format === 'yourls'
        ? yourlsRows(doc)
        : format === 'bitly'
          ? bitlyRows(doc)
          : linkboxRows(doc)
}

// ---------------------------------------------------------------------------------------------------------
// A JSON list read one item at a time: the text is scanned for the extent of each item of the top-level
// array, or of the "data" array of a top-level object, and only that item is parsed (JSON.parse of the
// whole 10 MiB made every link an object at once). An item over MAX_JSON_ITEM is given as null, unparsed.

const notJson = () => refused('is not valid JSON (a Kutt file is the answer of GET /api/v2/links)')

function* jsonItems(doc: string): Generator<unknown> {
  const n = doc.length
  const ws = (i: number) => {
    while (i < n && (doc[i] === ' ' || doc[i] === '\n' || doc[i] === '\r' || doc[i] === '\t')) i++
    return i
  }
  const stringEnd = (i: number) => {
    for (let j = i + 1; j < n; j++) {
      const c = doc.charCodeAt(j)
      if (c === 92) j++
      else if (c === 34) return j + 1
    }
    throw notJson()
  }
  // The end of the value starting at i (its inside checked by JSON.parse when it is parsed).
  const valueEnd = (i: number) => {
    const c = doc[i]
    if (c === '"') return stringEnd(i)
    if (c !== '{' && c !== '[') {
      let j = i
      while (j < n && !',]} \n\r\t'.includes(doc[j]!)) j++
      if (j === i) throw notJson()
      return j
    }
    let depth = 0
    for (let j = i; j < n; j++) {
      const d = doc[j]
      if (d === '"') j = stringEnd(j) - 1
      else if (d === '{' || d === '[') depth++
      else if ((d === '}' || d === ']') && --depth === 0) return j + 1
    }
    throw notJson()
  }
  let i = ws(0)
  let list = -1
  if (doc[i] === '[') list = i
  else if (doc[i] === '{') {
    i = ws(i + 1)
    while (doc[i] !== '}') {
      if (doc[i] !== '"') throw notJson()
      const end = stringEnd(i)
      const name = JSON.parse(doc.slice(i, end)) as string
      i = ws(end)
      if (doc[i] !== ':') throw notJson()
      i = ws(i + 1)
      if (name === 'data' && doc[i] === '[') list = i
      i = ws(valueEnd(i))
      if (doc[i] === ',') i = ws(i + 1)
      else if (doc[i] !== '}') throw notJson()
    }
    if (list < 0)
      throw refused('is JSON without a "data" list of links (a Kutt file is the answer of GET /api/v2/links)')
  } else throw notJson()
  i = ws(list + 1)
  if (doc[i] === ']') return
  for (;;) {
    const end = valueEnd(i)
    if (end - i > MAX_JSON_ITEM) yield null
    else {
      let item: unknown
      try {
        item = JSON.parse(doc.slice(i, end))
      } catch {
        throw notJson()
      }
      yield item
    }
    i = ws(end)
    if (doc[i] === ']') return
    if (doc[i] !== ',') throw notJson()
    i = ws(i + 1)
  }
}
