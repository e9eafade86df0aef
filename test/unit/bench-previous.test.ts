// The bench's regression guard (issue 39) reads the committed bench/RESULTS.md before a full run overwrites it:
// by id from the comment a RESULTS.md ends with, by label from the table of an older one. A wrong read would
// compare a row with another row's value.
import { describe, expect, test } from 'bun:test'
import { applyGuard, leadingNumber, previousFigures, tableCells } from '../../scripts/bench/previous'
import { resultsMarkdown, type Figure, type Run } from '../../scripts/bench/results'

// As bench/RESULTS.md of issue 37 has it: a before column, ranges, an escaped pipe, a second table after.
const OLD = `# Bench results

29 of 42 targets met in this run.

| figure | target | before (commit f44a7b4 (before issue 37)) | now | met now | baseline in this run |
| --- | --- | --- | --- | --- | --- |
| Redirects of one hot code ÷ bare Bun.serve 302 (default config: request lines on) | ≥ 0.85× | 0.64× (missed) | 0.71× (rounds 0.69–0.74×) | **missed** | bare Bun.serve 302: 98,979 req/s |
| Redirects of one hot code ÷ the floor | — | 0.73× | 0.79× (rounds 0.75–0.82×) | — | the floor server in the same rounds |
| A \\| piped label | — | 1 ms | 12,345 req/s | — |  |
| Not measured | — | 1 ms | n/a | — |  |

## Each section as printed

| figure | now |
| --- | --- |
| Redirects of one hot code ÷ the floor | 0.10× |
`

const hot = (value: number): Figure => ({
  id: 'redirect-hot-floor-ratio',
  label: 'Redirects of one hot code ÷ the floor',
  value,
  unit: '×',
  target: { op: '>=', value: 0.85 },
  baseline: 'the floor server in the same rounds',
})

describe('reading the previous RESULTS.md', () => {
  test('cells: an escaped pipe stays in its cell', () => {
    expect(tableCells('| A \\| b | 0.5× |  |')).toEqual(['A | b', '0.5×', ''])
  })
  test('the number a cell starts with, thousands separators and all; n/a is none', () => {
    expect(leadingNumber('0.79× (rounds 0.75–0.82×)')).toBe(0.79)
    expect(leadingNumber('98,979 req/s')).toBe(98979)
    expect(leadingNumber('-55.87 ms')).toBe(-55.87)
    expect(Number.isNaN(leadingNumber('n/a'))).toBe(true)
  })
  test('an older file: the "now" column by label, not the before column, the first table winning', () => {
    const { byId, byLabel } = previousFigures(OLD)
    expect(byId.size).toBe(0)
    expect(byLabel.get('Redirects of one hot code ÷ the floor')).toBe(0.79)
    expect(byLabel.get('Redirects of one hot code ÷ bare Bun.serve 302 (default config: request lines on)')).toBe(0.71)
    expect(byLabel.get('A | piped label')).toBe(12345)
    expect(byLabel.has('Not measured')).toBe(false)
  })
  test('a file this bench wrote: its figures by id from the comment at its end', () => {
    const run: Run = {
      binary: 'x',
      version: '0',
      commit: 'c',
      date: 'd',
      machine: 'm',
      figures: [hot(0.9), { id: 'b', label: 'B', value: NaN, unit: 'ms' }],
    }
    const md = resultsMarkdown({
      run,
      commands: [],
      sections: [],
      seconds: 4,
      rounds: 3,
      headRounds: 5,
      totalSeconds: 1,
    })
    expect(md).toContain('and issue 39, whose rows come first')
    expect(md).toContain('- Rounds: 3 of 4 s per figure (median of the rounds); 5 for the first two sections')
    const { byId } = previousFigures(md)
    expect(byId.get('redirect-hot-floor-ratio')).toBe(0.9)
    expect(byId.has('b')).toBe(false)
  })
})

describe('the guard', () => {
  test('the ratio to the previous value, in the baseline cell and in the line it returns; the id before the label', () => {
    const f = hot(0.87)
    const line = applyGuard(f, previousFigures(OLD))
    expect(line).toBe(
      'regression guard: Redirects of one hot code ÷ the floor: 0.87× now, ÷ previous bench/RESULTS.md (0.79×): 1.10',
    )
    expect(f.baseline).toBe(
      'the floor server in the same rounds; regression guard: ÷ previous bench/RESULTS.md (0.79×): 1.10',
    )
    const byId = previousFigures(`${OLD}\n<!-- bench figures: {"redirect-hot-floor-ratio":0.5} -->\n`)
    expect(applyGuard(hot(0.87), byId)).toEndWith('(0.50×): 1.74')
  })
  test('no previous file, or no such row in it: said so; a row the guard does not watch: nothing', () => {
    expect(applyGuard(hot(0.87), null)).toEndWith('0.87× now, no previous bench/RESULTS.md value')
    const k1: Figure = {
      id: 'redirect-1k-floor-ratio',
      label: 'Redirects over 1,000 codes ÷ the floor',
      value: 1,
      unit: '×',
    }
    applyGuard(k1, previousFigures(OLD))
    expect(k1.baseline).toBe('regression guard: no previous bench/RESULTS.md value')
    const other: Figure = { id: 'create-ratio', label: 'C', value: 1, unit: '×' }
    expect(applyGuard(other, previousFigures(OLD))).toBeNull()
    expect(other.baseline).toBeUndefined()
  })
})
