// CSV as RFC 4180 says, both ways (the export writes it, the import reads it); reading is lenient where
// exports in the wild are (a BOM, LF or CR line ends, no last line end, blank lines).

/**
 * A cell a spreadsheet would run as a formula (=, +, -, @, and tab or CR before them) gets a ' in front; so
 * does one that already starts with 's before such a character, so that the import's one ' dropped gives it back.
 */
const FORMULA_START = /^'*[=+\-@\t\r]/

/** One field, quoted when it must be; `numeric` fields (numbers linkbox writes) are never neutralised. */
export function csvField(value: string | number | null | undefined, numeric = false): string {
  if (value === null || value === undefined) return ''
  let text = String(value)
  if (!numeric && FORMULA_START.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/** One line of fields, ended by CRLF. */
export const csvLine = (fields: string[]) => `${fields.join(',')}\r\n`

/** Undoes the export's neutralisation: a ' before a character that starts a formula is dropped. */
export const unneutralise = (text: string) => (FORMULA_START.test(text) && text[0] === "'" ? text.slice(1) : text)

export class CsvError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message)
    this.name = 'CsvError'
  }
}

export interface CsvRecord {
  /** The line of the file the record starts on (1 is the header). */
  line: number
  fields: string[]
}

/**
 * The records of a CSV text, in order, each with the line it starts on. A quote that opens a field and is
 * never closed, or a character after a closing quote other than a comma or a line end, is an error that
 * names its line (a file cut short, or not CSV at all). `delimiter` is one character (, or ; or a tab).
 */
export function parseCsv(text: string, delimiter = ','): CsvRecord[] {
  return [...csvRecords(text, delimiter)]
}

/** parseCsv one record at a time (an import holds one batch of records, never the whole file's). */
export function* csvRecords(text: string, delimiter = ','): Generator<CsvRecord> {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  const n = text.length
  let fields: string[] = []
  let line = 1
  let start = 1
  let i = 0
  // Counts the line ends inside a slice (CRLF, LF or a lone CR each end one line).
  const lineEnds = (from: number, to: number) => {
    let count = 0
    for (let k = from; k < to; k++) {
      const c = text.charCodeAt(k)
      if (c === 10 || (c === 13 && text.charCodeAt(k + 1) !== 10)) count++
    }
    return count
  }
  // A blank line is no record.
  const complete = () => !(fields.length === 1 && fields[0] === '')
  // One field per turn, read by slices (a 10 MiB field is not built a character at a time).
  for (;;) {
    let field: string
    if (text[i] === '"') {
      let from = i + 1
      field = ''
      for (;;) {
        const quote = text.indexOf('"', from)
        if (quote < 0)
          throw new CsvError(`line ${start}: a quoted field is not closed before the end of the file`, start)
        field += text.slice(from, quote)
        line += lineEnds(from, quote)
        if (text[quote + 1] === '"') {
          field += '"'
          from = quote + 2
          continue
        }
        i = quote + 1
        break
      }
      const next = text[i]
      if (next !== undefined && next !== delimiter && next !== '\r' && next !== '\n')
        throw new CsvError(
          `line ${line}: a quoted field must end at a ${delimiter === '\t' ? 'tab' : `"${delimiter}"`} or a line end`,
          line,
        )
    } else {
      let end = i
      while (end < n) {
        const c = text[end]
        if (c === delimiter || c === '\r' || c === '\n') break
        end++
      }
      field = text.slice(i, end)
      i = end
    }
    fields.push(field)
    if (i >= n) {
      if (complete()) yield { line: start, fields }
      break
    }
    const c = text[i]
    if (c === delimiter) {
      i++
      continue
    }
    // A line end: the record is complete.
    if (complete()) yield { line: start, fields }
    fields = []
    i += c === '\r' && text[i + 1] === '\n' ? 2 : 1
    line++
    start = line
    if (i >= n) break
  }
}

/**
 * Counts the records of `text` from `start` (0, or a `next` this returned) without building them: at most
 * `max` records, or to the end (`next` -1). The same records as csvRecords (blank lines are none), the same
 * errors (CsvError naming the line), and a record of more than `maxFields` fields is an error too. An
 * import counts a 10 MiB file this way, a slice at a time, before it makes any link.
 */
export function countCsvRecords(
  text: string,
  start: { at: number; line: number },
  max: number,
  maxFields: number,
  delimiter = ',',
): { records: number; next: { at: number; line: number } | null } {
  const d = delimiter.charCodeAt(0)
  const n = text.length
  let i = start.at === 0 && text.charCodeAt(0) === 0xfeff ? 1 : start.at
  let line = start.line
  let records = 0
  while (i < n && records < max) {
    const first = line
    let fields = 0
    let empty = true
    for (;;) {
      fields++
      if (fields > maxFields) throw new CsvError(`line ${first} has more than ${maxFields} fields`, first)
      empty = true
      if (text.charCodeAt(i) === 34) {
        let from = i + 1
        for (;;) {
          const quote = text.indexOf('"', from)
          if (quote < 0)
            throw new CsvError(`line ${first}: a quoted field is not closed before the end of the file`, first)
          for (let k = from; k < quote; k++) {
            const c = text.charCodeAt(k)
            if (c === 10 || (c === 13 && text.charCodeAt(k + 1) !== 10)) line++
          }
          if (quote > from) empty = false
          if (text.charCodeAt(quote + 1) === 34) {
            empty = false
            from = quote + 2
            continue
          }
          i = quote + 1
          break
        }
        const c = text.charCodeAt(i)
        if (i < n && c !== d && c !== 13 && c !== 10)
          throw new CsvError(
            `line ${line}: a quoted field must end at a ${delimiter === '\t' ? 'tab' : `"${delimiter}"`} or a line end`,
            line,
          )
      } else {
        while (i < n) {
          const c = text.charCodeAt(i)
          if (c === d || c === 13 || c === 10) break
          empty = false
          i++
        }
      }
      if (i < n && text.charCodeAt(i) === d) {
        i++
        continue
      }
      break
    }
    // The record ends at a line end or the end of the text; a blank line is none.
    if (!(fields === 1 && empty)) records++
    if (i < n) {
      i += text.charCodeAt(i) === 13 && text.charCodeAt(i + 1) === 10 ? 2 : 1
      line++
    }
  }
  return { records, next: i < n ? { at: i, line } : null }
}
