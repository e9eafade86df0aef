#!/usr/bin/env bun
// The bench's bulk loader: a data directory with an account "bench" owning N links (the oldest of them
// with M clicks over 365 days ending today) and an account "small" owning 100 links, made in seconds. The
// API would take an hour for a million links; the statistics need a year of clicks no bench can send.
//
//   bun scripts/bench/load.ts --links 1000000 --data DIR            1M links, no clicks
//   bun scripts/bench/load.ts --links 100000 --clicks 10000000 --data DIR
//
// DIR is a data_dir for `linkbox serve` (DIR/linkbox.db); DIR/bench.json says what is in it (the keys,
// the clicked code, the link ids) and DIR/codes.txt lists the codes of "bench", oldest first.
//
// Links go in as plain SQL at schema version 2, whose links table this file knows; openDatabase then runs
// the later migrations on them as on any existing database (a counter they add is filled by them). Clicks
// go through the code's own writer, sqliteClickWriter(db).write(ClickBatch), one day per entry, so they land
// in whatever statistics tables the current schema has. Everything is seeded: same arguments, same data.
import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { hashKey, randomBase62 } from '../../src/accounts'
import { SCOPES } from '../../src/kernel/caller'
import { DAY_MS, dayOf, newDayCounts, type ClickBatch, type DayCounts } from '../../src/clicks/batch'
import { bump } from '../../src/clicks/names'
import { sqliteClickWriter } from '../../src/clicks/storage/sqlite'
import { openDatabase } from '../../src/db/sqlite'
import { migrations } from '../../src/db/sqlite/migrations'
import { isReserved } from '../../src/links/validate'

/** What bench.json holds: enough for the bench to use the data without reading the database. */
export interface LoadedData {
  schema: number
  links: number
  clicks: number
  /** The last day with clicks (UTC, YYYY-MM-DD); the first is 364 days before. */
  endDay: string
  key: string
  smallKey: string
  /** The link with the clicks (the oldest of "bench"). */
  statsCode: string
  /** The first link id of each account; its links have the ids that follow (first + n as a links.json
   *  cursor leaves the n oldest links on the page). */
  benchFirstId: number
  smallFirstId: number
  smallLinks: number
}

const LINKS_SCHEMA = 2 // the migration after which the loader writes links directly
const SMALL_LINKS = 100
const CODE_SPACE = 62 ** 6
const CODE_STEP = 2_654_435_761 // prime, so i → i·step mod 62^6 visits every code once; n·step stays below 2^53 up to n = 3.3M

/** mulberry32: a small seeded generator, so that a data set can be made again exactly. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
/** The n-th code of a fixed permutation of all 6-character codes: distinct and random-looking. */
export function nthCode(n: number): string {
  let v = (n * CODE_STEP + 12345) % CODE_SPACE
  let out = ''
  for (let i = 0; i < 6; i++) {
    out = BASE62[v % 62] + out
    v = Math.floor(v / 62)
  }
  return out
}

/** `total` split over `weights` (each jittered by ±jitter): whole numbers that add up to `total` exactly. */
export function split(total: number, weights: number[], rnd: () => number, jitter = 0.2): number[] {
  const w = weights.map((x) => x * (1 - jitter + 2 * jitter * rnd()))
  const sum = w.reduce((a, b) => a + b, 0)
  const out = w.map((x) => Math.floor((total * x) / sum))
  let rest = total - out.reduce((a, b) => a + b, 0)
  for (let i = 0; rest > 0; i = (i + 1) % out.length, rest--) out[i]!++
  return out
}

// What a popular link's visitors look like: a few big sources and a long tail of small sites (the issue's
// link had 18,714 distinct referrer hosts in a year), browsers and systems as ua-parser-js names them.
const SOURCES: [string, number][] = [
  ['direct', 30],
  ['google.com', 18],
  ['t.co', 8],
  ['facebook.com', 6],
  ['linkedin.com', 4],
  ['reddit.com', 4],
  ['news.ycombinator.com', 3],
  ['bing.com', 2],
  ['duckduckgo.com', 2],
  ['instagram.com', 1.5],
  ['youtube.com', 1.5],
  ['mail.google.com', 1],
  ['outlook.live.com', 1],
  ['github.com', 1],
  ['app.slack.com', 0.8],
  ['l.facebook.com', 0.8],
  ['m.facebook.com', 0.6],
  ['lnkd.in', 0.5],
  ['mastodon.social', 0.5],
  ['discord.com', 0.4],
  ['teams.microsoft.com', 0.4],
  ['yandex.ru', 0.3],
  ['baidu.com', 0.3],
  ['medium.com', 0.3],
  ['substack.com', 0.3],
]
const TAIL_SHARE = 0.15 // of a day's human clicks, from the long tail
const TAIL_POOL = 20_000 // distinct small hosts the tail draws from
const TAIL_PER_DAY = 600
const TAIL_WORDS = ['blog', 'news', 'forum', 'wiki', 'shop', 'docs', 'www2', 'community', 'info', 'portal']
const TAIL_TLDS = ['com', 'net', 'org', 'io', 'de', 'fr', 'co.uk', 'nl', 'es', 'it', 'jp', 'com.br']
const tailHost = (k: number) => `${TAIL_WORDS[k % 10]}-${(k * 7919) % 100_003}.example-${k % 97}.${TAIL_TLDS[k % 12]}`
const DEVICES: [string, number][] = [
  ['desktop', 55],
  ['mobile', 38],
  ['tablet', 5],
  ['other', 2],
]
const BROWSERS: [string, number][] = [
  ['Chrome', 40],
  ['Mobile Safari', 16],
  ['Safari', 8],
  ['Firefox', 7],
  ['Edge', 6],
  ['Samsung Browser', 3],
  ['Chrome WebView', 3],
  ['Opera', 2],
  ['Facebook', 2],
  ['Instagram', 1.5],
  ['Yandex', 0.5],
  ['UCBrowser', 0.5],
  ['Vivaldi', 0.3],
  ['Brave', 0.3],
  ['Other', 1],
]
const SYSTEMS: [string, number][] = [
  ['Windows', 36],
  ['Android', 26],
  ['iOS', 20],
  ['Mac OS', 11],
  ['Linux', 3],
  ['Chromium OS', 1.5],
  ['Ubuntu', 1],
  ['HarmonyOS', 0.5],
  ['Other', 1],
]

function spread(into: Map<string, number>, total: number, names: [string, number][], rnd: () => number) {
  const parts = split(
    total,
    names.map((n) => n[1]),
    rnd,
  )
  names.forEach(([name], i) => parts[i]! > 0 && bump(into, name, parts[i]))
}

/** One day's clicks of the clicked link: `humans` by source, device, browser and system, and ~4% bots. */
function dayCounts(humans: number, rnd: () => number): DayCounts {
  const d = newDayCounts()
  d.clicks = humans
  d.bots = Math.round(humans * (0.02 + 0.04 * rnd()))
  const tail = Math.round(humans * TAIL_SHARE)
  spread(d.dims.source, humans - tail, SOURCES, rnd)
  const hosts = Array.from({ length: TAIL_PER_DAY }, () => Math.floor(rnd() * TAIL_POOL))
  const parts = split(
    tail,
    hosts.map(() => 1 + rnd() * 3),
    rnd,
    0,
  )
  hosts.forEach((k, i) => parts[i]! > 0 && bump(d.dims.source, tailHost(k), parts[i]))
  spread(d.dims.device, humans, DEVICES, rnd)
  spread(d.dims.browser, humans, BROWSERS, rnd)
  spread(d.dims.os, humans, SYSTEMS, rnd)
  return d
}

/** Human clicks per day over 365 days: growing, quieter at weekends, a few spikes; `total` exactly. */
function dailyTotals(total: number, firstDay: number, rnd: () => number): number[] {
  const weights = Array.from({ length: 365 }, (_, i) => {
    const weekday = new Date((firstDay + i) * DAY_MS).getUTCDay()
    const spike = rnd() < 0.02 ? 4 + rnd() * 6 : 1
    return (0.6 + (0.8 * i) / 364) * (weekday === 0 || weekday === 6 ? 0.7 : 1) * spike
  })
  return split(total, weights, rnd)
}

/** Runs migrations up to `version` the way db/index.ts does (an empty file: nothing to check). */
function migrateTo(db: Database, version: number) {
  db.exec('PRAGMA foreign_keys = OFF')
  for (let v = 0; v < version; v++) {
    const m = migrations[v]!
    db.transaction(() => {
      db.exec(typeof m === 'string' ? m : m.sql)
      db.exec(`PRAGMA user_version = ${v + 1}`)
    })()
  }
}

export async function load(opts: {
  links: number
  clicks?: number
  data: string
  today?: number
}): Promise<LoadedData> {
  const { links, data } = opts
  const clicks = opts.clicks ?? 0
  if (!Number.isInteger(links) || links < 1 || links > 3_000_000)
    throw new Error('load: --links must be a whole number from 1 to 3,000,000')
  if (!Number.isInteger(clicks) || clicks < 0) throw new Error('load: --clicks must be a whole number, 0 or more')
  if (existsSync(data) && readdirSync(data).length > 0)
    throw new Error(`load: ${data} is not empty; give a new directory`)
  mkdirSync(data, { recursive: true })
  const path = join(data, 'linkbox.db')
  const now = opts.today ?? Date.now()
  const endDayNumber = Math.floor(now / DAY_MS)

  // Links: direct inserts in one transaction, at the schema version this file was written for.
  const raw = new Database(path, { create: true, strict: true })
  raw.exec('PRAGMA journal_mode = WAL')
  raw.exec('PRAGMA synchronous = OFF')
  raw.exec('PRAGMA cache_size = -524288') // 512 MiB: random codes touch every page of the code index
  migrateTo(raw, LINKS_SCHEMA)
  const key = `lbk_${randomBase62(40)}`
  const smallKey = `lbk_${randomBase62(40)}`
  const codes: string[] = []
  const firstIds: number[] = []
  raw.transaction(() => {
    const account = raw.query<{ id: number }, [string, number]>(
      'INSERT INTO accounts (name, created) VALUES (?1, ?2) RETURNING id',
    )
    const apiKey = raw.query(
      'INSERT INTO api_keys (account_id, prefix, hash, scopes, label, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6)',
    )
    const link = raw.query<{ id: number }, [string, string, number, number]>(
      `INSERT INTO links (code, long_url, account_id, created, updated) VALUES (?1, ?2, ?3, ?4, ?4) RETURNING id`,
    )
    const yearAgo = now - 365 * DAY_MS
    let n = 0
    const fill = (accountId: number, count: number, keep?: string[]) => {
      // In code order, the unique index only grows at its end: 3× faster than random order.
      const sorted: string[] = []
      while (sorted.length < count) {
        const code = nthCode(n++)
        if (!isReserved(code)) sorted.push(code)
      }
      sorted.sort()
      for (let i = 0; i < count; i++) {
        const code = sorted[i]!
        const created = Math.floor(yearAgo + ((i + 1) / count) * 365 * DAY_MS * 0.99)
        const id = link.get(
          code,
          `https://example.com/articles/${i}?utm_source=bench&utm_medium=short`,
          accountId,
          created,
        )!.id
        if (i === 0) firstIds.push(id)
        keep?.push(code)
      }
    }
    for (const [name, k, count, keep] of [
      ['bench', key, links, codes],
      ['small', smallKey, SMALL_LINKS, undefined],
    ] as const) {
      const id = account.get(name, now)!.id
      apiKey.run(id, k.slice(0, 11), hashKey(k), SCOPES.join(','), 'bench loader', now)
      fill(id, count, keep)
    }
  })()
  raw.close()

  // The rest of the schema, then a year of clicks through the code's own writer.
  const db = openDatabase(path)
  db.exec('PRAGMA synchronous = OFF')
  if (clicks > 0) {
    const rnd = seeded(7)
    const firstDay = endDayNumber - 364
    const perDay = dailyTotals(clicks, firstDay, rnd)
    const store = sqliteClickWriter(db)
    for (let start = 0; start < 365; start += 30) {
      const days = new Map<number, DayCounts>()
      for (let i = start; i < Math.min(start + 30, 365); i++) days.set(firstDay + i, dayCounts(perDay[i]!, rnd))
      const batch: ClickBatch = new Map([[firstIds[0]!, days]])
      store.write(batch)
    }
  }
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  db.close()

  const loaded: LoadedData = {
    schema: migrations.length,
    links,
    clicks,
    endDay: dayOf(endDayNumber * DAY_MS),
    key,
    smallKey,
    statsCode: codes[0]!,
    benchFirstId: firstIds[0]!,
    smallFirstId: firstIds[1]!,
    smallLinks: SMALL_LINKS,
  }
  await Bun.write(join(data, 'codes.txt'), codes.join('\n') + '\n')
  // Last: a directory without bench.json is an interrupted load, never used.
  writeFileSync(join(data, 'bench.json'), JSON.stringify(loaded))
  return loaded
}

/**
 * The bench's data sets, made once and kept under `cacheDir` (git-ignored), keyed by the schema version
 * (migrations.length), the sizes, and for clicks the day they end (the public page shows the last 30 days
 * up to today). The bench runs servers on a copy, never on these.
 */
export async function cachedData(
  cacheDir: string,
  links: number,
  clicks = 0,
): Promise<{ dir: string; data: LoadedData; made: boolean; ms: number }> {
  const kind = `schema${migrations.length}-links${links}-clicks${clicks}`
  const name = clicks > 0 ? `${kind}-${dayOf(Date.now())}` : kind
  const dir = join(cacheDir, name)
  if (existsSync(join(dir, 'bench.json')))
    return { dir, data: await Bun.file(join(dir, 'bench.json')).json(), made: false, ms: 0 }
  // An interrupted load, or the same data set ending on an earlier day: made again.
  mkdirSync(cacheDir, { recursive: true })
  for (const old of readdirSync(cacheDir))
    if (old === name || old.startsWith(`${kind}-`)) rmSync(join(cacheDir, old), { recursive: true, force: true })
  const started = performance.now()
  const data = await load({ links, clicks, data: dir })
  return { dir, data, made: true, ms: performance.now() - started }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: { links: { type: 'string' }, clicks: { type: 'string', default: '0' }, data: { type: 'string' } },
  })
  if (!values.links || !values.data) {
    console.error('usage: bun scripts/bench/load.ts --links N [--clicks M] --data DIR')
    process.exit(2)
  }
  const started = performance.now()
  const d = await load({ links: Number(values.links), clicks: Number(values.clicks), data: values.data })
  console.log(
    `${values.data}: account "bench" with ${d.links} links, "small" with ${d.smallLinks}; ` +
      `${d.clicks} clicks on ${d.statsCode} over 365 days to ${d.endDay}; schema ${d.schema}; ` +
      `${((performance.now() - started) / 1000).toFixed(1)} s`,
  )
  console.log(`key of "bench": ${d.key}`)
}
