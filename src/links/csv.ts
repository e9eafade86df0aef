// CSV as RFC 4180 says (a header row, fields in double quotes where they hold a comma, a quote or a line
// break, a quote inside written twice, lines ended by CRLF), both ways: the export writes it and the
// import reads it. Reading is lenient where exports in the wild are: a UTF-8 byte order mark, LF or CR
// line ends, a last line without its line end, and blank lines are all accepted.

/** A cell a spreadsheet would run as a formula (=, +, -, @, and tab or CR before them) gets a ' in front. */
const FORMULA_START = /^[=+\-@\t\r]/

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
export const unneutralise = (text: string) => (/^'[=+\-@\t\r]/.test(text) ? text.slice(1) : text)

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
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  const records: CsvRecord[] = []
  let fields: string[] = []
  let field = ''
  let line = 1
  let start = 1
  let quoted = false
  let i = 0
  const n = text.length
  const endRecord = () => {
    fields.push(field)
    // A blank line is no record.
    if (!(fields.length === 1 && fields[0] === '')) records.push({ line: start, fields })
    fields = []
    field = ''
  }
  while (i < n) {
    const c = text[i]!
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"'
          i += 2
          continue
        }
        quoted = false
        i++
        const next = text[i]
        if (next !== undefined && next !== delimiter && next !== '\r' && next !== '\n')
          throw new CsvError(`line ${line}: a quoted field must end at a ${delimiter === '\t' ? 'tab' : `"${delimiter}"`} or a line end`, line)
        continue
      }
      if (c === '\n') line++
      else if (c === '\r' && text[i + 1] !== '\n') line++
      field += c
      i++
      continue
    }
    if (c === '"' && field === '') {
      quoted = true
      i++
      continue
    }
    if (c === delimiter) {
      fields.push(field)
      field = ''
      i++
      continue
    }
    if (c === '\r' || c === '\n') {
      endRecord()
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1
      line++
      start = line
      continue
    }
    field += c
    i++
  }
  if (quoted) throw new CsvError(`line ${start}: a quoted field is not closed before the end of the file`, start)
  if (field !== '' || fields.length > 0) endRecord()
  return records
}
