// The import counts a file's rows before it makes any (issue 36 item 4) with a scanner that builds no record
// (import-formats.ts rowCounts, csv.ts countCsvRecords): it must count exactly the rows the reader gives,
// and refuse exactly the files the reader refuses, whatever the CSV; and Kutt's list is read an item at a time.
import { describe, expect, test } from 'bun:test'
import { importRows, rowCounts, type ImportFormat } from '../../src/links/import-formats'
import { importFixture } from '../support/import'

/** What the reader gives (rows or the refusal's message) and what the counter says, for one file. */
function both(text: string, format: ImportFormat, slice = 3) {
  const read = (() => {
    try {
      return [...importRows(text, format)].length
    } catch (err) {
      return (err as Error).message
    }
  })()
  const counted = (() => {
    try {
      importRows(text, format).next()
      let rows = 0
      for (rows of rowCounts(text, format, slice));
      return rows
    } catch (err) {
      return (err as Error).message
    }
  })()
  return { read, counted }
}

describe('rowCounts counts what importRows reads', () => {
  test('the fixtures, each format', () => {
    for (const [name, format] of [
      ['shlink.csv', 'shlink'],
      ['kutt.json', 'kutt'],
      ['yourls.csv', 'yourls'],
      ['bitly.csv', 'bitly'],
    ] as const) {
      const { read, counted } = both(importFixture(name), format)
      expect({ name, counted }).toEqual({ name, counted: read })
    }
    const headless = importFixture('yourls.csv').split('\n').slice(1).join('\n')
    expect(both(headless, 'yourls')).toEqual({ read: 4, counted: 4 })
  })

  test('random CSV of quotes, doubled quotes, delimiters, CR, LF, CRLF, blank lines and a BOM: the same count or the same refusal', () => {
    let seed = 42
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const atoms = ['a', 'b', ',', '"', '""', '\n', '\r\n', '\r', ' ', 'é', '"x,y"', '""""', '\n\n']
    for (let i = 0; i < 3000; i++) {
      const body = Array.from({ length: Math.floor(rnd() * 14) }, () => atoms[Math.floor(rnd() * atoms.length)]).join(
        '',
      )
      const text = `${rnd() < 0.2 ? '\uFEFF' : ''}long_url,code\n${body}`
      const { read, counted } = both(text, 'csv', 1 + Math.floor(rnd() * 4))
      expect({ text, counted }).toEqual({ text, counted: read })
    }
  })

  test('a record of more than 200 fields refuses the file, naming its line', () => {
    const text = `long_url\nhttps://example.com/\n${','.repeat(200)}\n`
    expect(both(text, 'csv')).toEqual({
      read: expect.stringContaining('line 3 has more than 200 fields'),
      counted: expect.stringContaining('line 3 has more than 200 fields'),
    })
  })
})

describe("Kutt's list, an item at a time", () => {
  test('the top-level array and {data: […]} both read; an item over 64 KiB is a skipped row, not parsed; bad JSON refuses the file', () => {
    const item = (n: number) => ({
      address: `k${n}`,
      target: `https://example.com/${n}`,
      created_at: '2025-01-02T03:04:05Z',
      description: `D${n}`,
    })
    const list = [
      item(1),
      { address: 'big', target: 'https://example.com/big', description: 'x'.repeat(70 * 1024) },
      item(3),
    ]
    for (const text of [
      JSON.stringify(list),
      JSON.stringify({ total: 3, data: list, limit: 10 }),
      ` \n${JSON.stringify({ data: list })}\n`,
    ]) {
      const rows = [...importRows(text, 'kutt')]
      expect(rows.map((r) => [r.line, r.code, r.title ?? '', r.problem?.reason ?? ''])).toEqual([
        [1, 'k1', 'D1', ''],
        [2, '', '', 'invalid_row'],
        [3, 'k3', 'D3', ''],
      ])
      expect(rows[0]!.created).toBe(Date.parse('2025-01-02T03:04:05Z'))
      expect(both(text, 'kutt')).toEqual({ read: 3, counted: 3 })
    }
    for (const bad of [
      '[{"address": "a",}]',
      '[{"address": "a"}, {"address": "b",}]',
      '{"data": [1, 2',
      '{"data": {}}',
      '{"data" [1]}',
    ]) {
      const { read, counted } = both(bad, 'kutt')
      expect({ bad, read: typeof read, counted: typeof counted }).toEqual({ bad, read: 'string', counted: 'string' })
      expect(read).toContain('"file"')
    }
  })
})
