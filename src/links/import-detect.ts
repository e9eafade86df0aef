// Which of the import formats a file is, from its first bytes: JSON is Kutt's list; a CSV file is known by the
// column names of its header row (each format's own, as import-formats.ts reads them), or by the shape of a
// YOURLS table dumped without its header.
import { CsvError, csvRecords } from './csv'
import type { ImportFormat } from './import-formats'

/** The header row is looked for in this much of the file at most (a header of 200 long names fits). */
const HEAD_CHARS = 64 * 1024
const key = (name: string) => name.toLowerCase().replace(/[\s_-]+/g, '')
const YOURLS_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/

/** The format of `text`, or null when no format's header (or shape) is recognised. */
export function detectFormat(text: string): ImportFormat | null {
  const head = text.slice(0, HEAD_CHARS).replace(/^\uFEFF/, '')
  const start = head.trimStart()[0]
  if (start === '{' || start === '[') return 'kutt'
  let first: string[] | undefined
  try {
    // Only whole records: a header cut at HEAD_CHARS is no header.
    const records = csvRecords(head)
    first = records.next().value?.fields
  } catch (err) {
    if (!(err instanceof CsvError)) throw err
  }
  if (!first) return null
  const names = new Set(first.map(key))
  const has = (...all: string[]) => all.every((n) => names.has(n))
  // linkbox's own export has code and mode beside long_url; Shlink's has createdAt or shortCode beside longUrl.
  if (has('longurl') && (names.has('mode') || names.has('maxvisits') || names.has('haspassword'))) return 'csv'
  if (has('longurl') && (names.has('shortcode') || names.has('createdat') || names.has('visits'))) return 'shlink'
  if (has('link', 'destinationurl')) return 'bitly'
  if (has('keyword', 'url')) return 'yourls'
  if (has('target') && (names.has('address') || names.has('expirein') || names.has('description'))) return 'kutt'
  if (has('longurl')) return 'csv'
  // A YOURLS table without its header: keyword, url, title, timestamp, ip, clicks.
  if (first.length === 6 && YOURLS_TIME.test(first[3]!.trim()) && /^\d+$/.test(first[5]!.trim())) return 'yourls'
  return null
}
