// Clicks recorded by two nodes into one database (issue 22, SPEC §11: "clicks from every node add up
// exactly"): two click recorders, each writing through its own connection (SQLite: a second connection to
// the file, as a second process; PostgreSQL: a pool of its own, as a second node) with countsWriter over the
// click counts, record clicks of the same link and flush them at the same moments. Every count is an
// increment, so the day's clicks, its names and its new visitors are the sums of both, exactly.
import { describe, expect, test } from 'bun:test'
import { dayOf } from '../../src/clicks/batch'
import { createClickRecorder, type ClickRecorder } from '../../src/clicks/recorder'
import type { ClickCounts } from '../../src/clicks/storage/contract'
import { postgresClickCounts } from '../../src/clicks/storage/postgres'
import { sqliteClickCounts } from '../../src/clicks/storage/sqlite'
import { countsWriter } from '../../src/clicks/writer'
import { eventInserts } from '../../src/webhooks/storage/sqlite'
import { postgresWebhookQueue } from '../../src/webhooks/storage/postgres'
import { postgresStorages } from '../../src/app/storages-postgres'
import { sqliteStorages, type Storages } from '../../src/app/storages'
import { engineHarness } from '../support/engines'

const engines = engineHarness()

interface Setup {
  storages: Storages<any>
  /** Click counts on a connection of a node's own. */
  node(): ClickCounts
  close(): Promise<void>
}

const ENGINES: [string, () => Promise<Setup>][] = [
  [
    'SQLite',
    async () => {
      const d = engines.sqlite('linkbox-clicks-nodes-')
      return {
        storages: sqliteStorages(d.main),
        node: () => sqliteClickCounts(d.connect(), eventInserts),
        close: d.close,
      }
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const d = await engines.postgres()
      return {
        storages: postgresStorages(d.main.sql),
        node: () => {
          const pool = d.pool()
          return postgresClickCounts(pool, postgresWebhookQueue(pool))
        },
        close: d.close,
      }
    },
  ],
]

const AT = Date.UTC(2026, 10, 26, 12)
const DAY = dayOf(AT)
const AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0',
]
const REFERERS = ['', 'https://news.example/a', 'https://social.example/post/1']
const sum = (names: Map<string, number>) => [...names.values()].reduce((a, b) => a + b, 0)

describe.each(ENGINES)('two nodes recording clicks, on %s', (_name, setup) => {
  test('500 clicks of one link, 250 through each node, flushed at the same moments, count 500 with their names, and their visitors add up', async () => {
    const s = await setup()
    const recorders: ClickRecorder[] = []
    try {
      const made = await s.storages.links.insert(
        {
          code: 'nodes1',
          long_url: 'https://example.com/',
          account_id: null,
          mode: 'redirect',
          password_hash: null,
          created: AT,
          expires: null,
          max_visits: null,
          rules: null,
          split: null,
        },
        [],
      )
      if (typeof made === 'string') throw new Error(made)
      const linkId = made.id
      for (let n = 0; n < 2; n++)
        recorders.push(createClickRecorder(null, { writer: countsWriter(s.node()), log: () => {} }))
      // Five rounds: each node records 50 clicks from 30 addresses of its own (30 visitors a node: below
      // EXACT_MAX, so each node's count is exact rather than a sketch's estimate), then both flush at once,
      // so the two nodes' transactions on the same link-day overlap.
      for (let round = 0; round < 5; round++) {
        recorders.forEach((r, n) => {
          for (let i = 0; i < 50; i++) {
            const k = round * 50 + i
            r.record(linkId, AT + k, AGENTS[k % 3]!, REFERERS[k % 3]!, -1, 'nodes1', `10.${n}.0.${k % 30}`)
          }
        })
        expect(await Promise.all(recorders.map((r) => r.flush()))).toEqual([50, 50])
      }
      const [day] = await s.storages.counts.days(linkId, DAY, DAY)
      expect(day).toEqual({ day: DAY, clicks: 500, visitors: 60 })
      const names = await s.storages.counts.names(linkId, DAY, DAY)
      for (const dim of ['source', 'device', 'browser', 'os'] as const) expect(sum(names[dim])).toBe(500)
      // Each node's clicks k = 0…249 use AGENTS[k % 3]: 84 of them the Chrome one.
      expect(names.browser.get('Chrome')).toBe(2 * 84)
      expect(recorders.map((r) => r.dropped)).toEqual([0, 0])
    } finally {
      for (const r of recorders) await r.stop()
      await s.close()
    }
  })
})
