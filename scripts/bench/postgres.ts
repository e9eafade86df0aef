// PostgreSQL (issue 22): the same binary serving from PostgreSQL against serving from SQLite, and two nodes on
// one database against one. The data is the statistics data set (100,000 links, one with 10M clicks over 365
// days): the SQLite node serves a copy of it; the PostgreSQL database gets it through `linkbox migrate --to`
// (the binary under test), whose time is printed. The server is a throwaway cluster (test/support/postgres.ts:
// initdb + pg_ctl in a temporary directory, fsync off), on the same cores as the nodes and wrk.
//
// Ratios, not absolutes, measured alternately round by round (the order swapped each round): one hot code,
// 1,000 codes (random-code.lua), creations (getLink.json, post.lua with distinct URLs; with the CPU each cost the
// node and the PostgreSQL server, which says where a missed ratio goes). Also stats.json of the
// clicked link one request at a time (wrk -t1 -c1; the fixed 365-day window of stats.ts, and a different window
// each request, which no answer cache serves), and 1,000 codes over two nodes (two wrk of half the connections
// at once, summed) against one node (one wrk). Every answer used is checked first: each code's 302
// and location on every server, stats.json's days adding up to the data set's clicks, a link created on one
// PostgreSQL node redirecting on the other.
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { startPostgres, type Postgres } from '../../test/support/postgres'
import { apiPost, CHROME_UA, runCli, tempDir, writeConfig, type RunningServer } from '../../test/support/server'
import { removingOnStop, startBenchServer, serveCopy, type Binary } from './binary'
import { addDays, bodiesFile, codesFile, keyHeader, LUA, noted, type BenchContext } from './context'
import { cachedData } from './load'
import { STATS_DATA } from './spread'
import { cpuMs, formatResult as fmt, median, wrk, type WrkOptions, type WrkResult } from './wrk'

/** The long URL the loader gives the link at `index` of codes.txt (load.ts: in code order, as codes.txt lists them). */
export const loadedUrl = (index: number) => `https://example.com/articles/${index}?utm_source=bench&utm_medium=short`

/**
 * Checks that `base` answers every code of `expected` with a 302 to its URL (a few requests at a time); throws
 * with the first few that do not, so that the bench never measures 404s or wrong redirects.
 */
export async function checkRedirects(base: string, expected: Map<string, string>, name: string): Promise<void> {
  const wrong: string[] = []
  const entries = [...expected]
  for (let i = 0; i < entries.length; i += 25)
    await Promise.all(
      entries.slice(i, i + 25).map(async ([code, url]) => {
        const res = await fetch(`${base}/${code}`, { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })
        await res.arrayBuffer()
        const location = res.headers.get('location')
        if (res.status !== 302 || location !== url)
          wrong.push(`/${code}: ${res.status} ${location ?? '(no location)'}, expected 302 ${url}`)
      }),
    )
  if (wrong.length)
    throw new Error(
      `bench: ${name} answers ${wrong.length} of ${entries.length} codes wrongly: ${wrong.slice(0, 3).join('; ')}`,
    )
}

/** Two wrk runs made at the same time, as one: throughputs and errors added, the worse of their percentiles. */
export function summed(a: WrkResult, b: WrkResult): WrkResult {
  return {
    rps: a.rps + b.rps,
    p50ms: Math.max(a.p50ms, b.p50ms),
    p99ms: Math.max(a.p99ms, b.p99ms),
    errors: a.errors + b.errors,
    command: `${a.command} & ${b.command}`,
  }
}

/** The server's processes: the postmaster (its pid is the first line of postmaster.pid) and its children. */
function postgresPids(pg: Postgres): number[] {
  const master = Number(readFileSync(join(pg.dir, 'data/postmaster.pid'), 'utf8').split('\n')[0])
  const children = readFileSync(`/proc/${master}/task/${master}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number)
  return [master, ...children]
}

/** A `linkbox serve` of the binary on the PostgreSQL database `url` (a data_dir of its own, removed on stop). */
async function servePostgres(binary: Binary, url: string): Promise<RunningServer> {
  const config = writeConfig(tempDir('linkbox-bench-'), { database: { url } })
  const server = await startBenchServer({ config, command: [binary.path], startTimeoutMs: 60_000 })
  return removingOnStop(server, config.dir)
}

/** `linkbox migrate --to url` of a copy of the data set (migrate may bring a data_dir to its schema: never the cache). */
async function migrateCopy(binary: Binary, dataDir: string, url: string): Promise<{ ms: number; summary: string }> {
  const config = writeConfig(tempDir('linkbox-bench-'))
  try {
    mkdirSync(config.dataDir, { recursive: true })
    copyFileSync(join(dataDir, 'linkbox.db'), join(config.dataDir, 'linkbox.db'))
    const started = performance.now()
    const r = await runCli(['migrate', '--to', url, '--config', config.configPath], {
      command: [binary.path],
      timeoutMs: 600_000,
    })
    const ms = performance.now() - started
    if (r.code !== 0) throw new Error(`bench: linkbox migrate --to exited with ${r.code}: ${r.stderr}${r.stdout}`)
    const last = r.stdout.trimEnd().split('\n').pop() ?? ''
    // Its last line names the database URL (a random port and names): not kept in RESULTS.md.
    return { ms, summary: last.replace(/ into postgres:\/\/\S+/, ' into PostgreSQL') }
  } finally {
    rmSync(config.dir, { recursive: true, force: true })
  }
}

export async function benchPostgres(ctx: BenchContext): Promise<string[]> {
  const lines: string[] = []
  const { dir, data, made, ms: madeMs } = await cachedData(ctx.cacheDir, STATS_DATA.links, STATS_DATA.clicks)
  lines.push(
    `data: ${data.links.toLocaleString('en-US')} links, ${data.clicks.toLocaleString('en-US')} clicks on one, schema ${data.schema}, ${made ? `made in ${(madeMs / 1000).toFixed(1)} s` : 'from the cache'}`,
  )
  const allCodes = readFileSync(join(dir, 'codes.txt'), 'utf8').trim().split('\n')
  const indexOf = new Map(allCodes.map((c, i) => [c, i]))
  const codes1k = codesFile(dir, 1_000)
  const picked = readFileSync(codes1k, 'utf8').trim().split('\n')
  // The hot code: the newest link of "bench" (not the clicked one, whose statistics are measured below).
  const hot = allCodes[allCodes.length - 1]!
  const expected = new Map([hot, ...picked].map((c) => [c, loadedUrl(indexOf.get(c)!)]))
  const window365 = { code: data.statsCode, from: addDays(data.endDay, -364), to: data.endDay }
  const stats365 = bodiesFile('pg-stats-365', [window365])
  // A different 365-day window each request (as stats.ts's third variant): no answer cache serves these.
  const moving = bodiesFile(
    'pg-stats-365-moving',
    Array.from({ length: 300 }, (_, i) => ({
      ...window365,
      from: addDays(data.endDay, -364 - i),
      to: addDays(data.endDay, -i),
    })),
  )
  const creations = bodiesFile(
    'pg-create',
    Array.from({ length: 1000 }, (_, i) => ({ url: `https://example.com/new/${i}?ref=pg-bench` })),
  )
  const headers = { 'user-agent': CHROME_UA }
  const servers: RunningServer[] = []
  let pg: Postgres | undefined
  try {
    pg = await startPostgres()
    const admin = new Bun.SQL(pg.url, { max: 1 })
    const pgVersion = await admin`SHOW server_version`
      .then((rows) => rows[0].server_version as string)
      .finally(() => admin.close())
    const url = await pg.createDatabase()
    const copy = await migrateCopy(ctx.binary, dir, url)
    lines.push(`PostgreSQL ${pgVersion} (a throwaway cluster: fsync and synchronous_commit off, on the same machine)`)
    lines.push(
      `linkbox migrate --to (the binary under test) copied the data set in ${(copy.ms / 1000).toFixed(1)} s: "${copy.summary}"`,
    )
    // Two nodes on the one database (A is the node of every one-node figure), and the SQLite node.
    const [sqlite, a, b] = await Promise.all([
      serveCopy(ctx.binary, dir),
      servePostgres(ctx.binary, url),
      servePostgres(ctx.binary, url),
    ])
    servers.push(sqlite, a, b)

    // The answers, before anything is measured (and before any visit adds to the clicked link's count).
    const statsOn = async (box: RunningServer, name: string) => {
      const r = await apiPost(box.url, 'stats.json', window365, keyHeader(data.key))
      if (r.status !== 200)
        throw new Error(`bench: stats.json on ${name} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`)
      const sum = (r.body.return.days as { clicks: number }[]).reduce((s, d) => s + d.clicks, 0)
      if (sum !== data.clicks || r.body.return.clicks !== data.clicks)
        throw new Error(
          `bench: stats.json on ${name}: days add up to ${sum}, all time ${r.body.return.clicks}; the data set has ${data.clicks} clicks`,
        )
      return r.body.return
    }
    const [fromSqlite, fromPg] = [await statsOn(sqlite, 'the SQLite node'), await statsOn(a, 'the PostgreSQL node')]
    if (JSON.stringify(fromPg.days) !== JSON.stringify(fromSqlite.days))
      throw new Error('bench: stats.json on PostgreSQL gives other days than on SQLite')
    lines.push(
      `checked: stats.json (365 days) of the clicked link adds up to ${data.clicks.toLocaleString('en-US')} clicks on both engines, the same days on both`,
    )
    await checkRedirects(sqlite.url, expected, 'the SQLite node')
    await checkRedirects(a.url, expected, 'PostgreSQL node A')
    await checkRedirects(b.url, expected, 'PostgreSQL node B')
    const onA = await apiPost(
      a.url,
      'getLink.json',
      { url: 'https://example.com/new/check?ref=pg-bench' },
      keyHeader(data.key),
    )
    if (onA.status !== 200)
      throw new Error(`bench: getLink.json on node A answered ${onA.status}: ${JSON.stringify(onA.body)}`)
    await checkRedirects(
      b.url,
      new Map([[onA.body.return.hex as string, 'https://example.com/new/check?ref=pg-bench']]),
      'PostgreSQL node B (a link made on A)',
    )
    lines.push(
      `checked: the hot code and the 1,000 codes answer 302 to their URLs on the SQLite node and on both PostgreSQL nodes; a link made on A redirects on B`,
    )

    let errors = 0
    const run = (target: string, opts: WrkOptions) =>
      wrk(target, { seconds: ctx.seconds, ...opts }).then((r) => noted(ctx, r))
    const hotRun = (box: RunningServer, seconds = ctx.seconds) => run(`${box.url}/${hot}`, { seconds, headers })
    const spreadRun = (box: RunningServer, seconds = ctx.seconds, half = false) =>
      run(box.url, {
        seconds,
        headers,
        script: LUA.randomCode,
        scriptArgs: [codes1k],
        ...(half ? { threads: 1, connections: 32 } : {}),
      })
    const api = (box: RunningServer) => `${box.url}/api/getLink.json`
    const createRun = (box: RunningServer, seconds = ctx.seconds) =>
      run(api(box), { seconds, headers: keyHeader(data.key), script: LUA.post, scriptArgs: [creations] })
    // Warm: JIT, statement caches, the link caches, PostgreSQL's buffers.
    for (const box of [sqlite, a]) {
      await hotRun(box, 1)
      await spreadRun(box, 1)
      await createRun(box, 1)
    }
    await spreadRun(b, 1, true)

    /** PostgreSQL ÷ SQLite in rounds, the order swapped each round; a line per server per round. */
    const versus = async (what: string, measure: (box: RunningServer) => Promise<WrkResult>) => {
      const ratios: number[] = []
      const sqliteRps: number[] = []
      for (let i = 0; i < ctx.rounds; i++) {
        const order = i % 2 === 0 ? [sqlite, a] : [a, sqlite]
        const got = new Map<RunningServer, WrkResult>()
        for (const box of order) got.set(box, await measure(box))
        const s = got.get(sqlite)!
        const p = got.get(a)!
        errors += s.errors + p.errors
        ratios.push(p.rps / s.rps)
        sqliteRps.push(s.rps)
        lines.push(`round ${i + 1}: ${what}, SQLite node       ${fmt(s)}`)
        lines.push(`round ${i + 1}: ${what}, PostgreSQL node   ${fmt(p)}  (÷ SQLite ${(p.rps / s.rps).toFixed(2)})`)
      }
      return {
        ratio: median(ratios),
        baseline: `SQLite node: ${Math.round(median(sqliteRps)).toLocaleString('en-US')} req/s`,
      }
    }
    const hotRatio = await versus('one hot code        ', (box) => hotRun(box))
    const spreadRatio = await versus('1,000 codes         ', (box) => spreadRun(box))

    // stats.json one at a time, PostgreSQL then SQLite (the SQLite node's figure is the baseline, no ratio).
    const one = { connections: 1, threads: 1, headers: keyHeader(data.key), script: LUA.post, scriptArgs: [stats365] }
    const oneMoving = { ...one, scriptArgs: [moving] }
    await run(`${a.url}/api/stats.json`, { ...one, seconds: 1 })
    await run(`${a.url}/api/stats.json`, { ...oneMoving, seconds: 1 })
    const pgStats = await run(`${a.url}/api/stats.json`, one)
    const sqliteStats = await run(`${sqlite.url}/api/stats.json`, one)
    const pgMoving = await run(`${a.url}/api/stats.json`, oneMoving)
    const sqliteMoving = await run(`${sqlite.url}/api/stats.json`, oneMoving)
    errors += pgStats.errors + sqliteStats.errors + pgMoving.errors + sqliteMoving.errors
    lines.push(`stats.json, 365 days, 10M clicks, one at a time: PostgreSQL node      ${fmt(pgStats)}`)
    lines.push(`stats.json, 365 days, 10M clicks, one at a time: SQLite node          ${fmt(sqliteStats)}`)
    lines.push(`the same, a different 365-day window each request: PostgreSQL node ${fmt(pgMoving)}`)
    lines.push(`the same, a different 365-day window each request: SQLite node     ${fmt(sqliteMoving)}`)

    // With the CPU each creation cost the node (all its threads) and, on PostgreSQL, the database server.
    const cpuPerCreation = { sqlite: [] as number[], node: [] as number[], postgres: [] as number[] }
    const postgresCpu = () => postgresPids(pg!).reduce((sum, pid) => sum + cpuMs(pid), 0)
    const createRatio = await versus('creations           ', async (box) => {
      const [node0, server0] = [cpuMs(box.proc.pid), box === a ? postgresCpu() : 0]
      const r = await createRun(box)
      const perCreation = (ms: number) => (ms * 1000) / Math.max(1, r.rps * ctx.seconds)
      if (box === a) {
        cpuPerCreation.node.push(perCreation(cpuMs(box.proc.pid) - node0))
        cpuPerCreation.postgres.push(perCreation(postgresCpu() - server0))
      } else cpuPerCreation.sqlite.push(perCreation(cpuMs(box.proc.pid) - node0))
      return r
    })
    const µs = (xs: number[]) => `${median(xs).toFixed(0)} µs`
    lines.push(
      `CPU per creation (median): SQLite node ${µs(cpuPerCreation.sqlite)}; PostgreSQL node ${µs(cpuPerCreation.node)} and the PostgreSQL server ${µs(cpuPerCreation.postgres)}`,
    )

    // Two nodes against one: the same offered load (64 connections), to one node or split over two.
    const twoRatios: number[] = []
    const oneRps: number[] = []
    for (let i = 0; i < ctx.rounds; i++) {
      let single: WrkResult | undefined
      if (i % 2 === 0) single = await spreadRun(a)
      const [x, y] = await Promise.all([spreadRun(a, ctx.seconds, true), spreadRun(b, ctx.seconds, true)])
      single ??= await spreadRun(a)
      const both = summed(x, y)
      errors += single.errors + both.errors
      lines.push(`round ${i + 1}: 1,000 codes, node A of two  ${fmt(x)}`)
      lines.push(`round ${i + 1}: 1,000 codes, node B of two  ${fmt(y)}`)
      twoRatios.push(both.rps / single.rps)
      oneRps.push(single.rps)
      lines.push(`round ${i + 1}: 1,000 codes, one node       ${fmt(single)}`)
      lines.push(
        `round ${i + 1}: 1,000 codes, two nodes      ${fmt(both)}  (÷ one node ${(both.rps / single.rps).toFixed(2)})`,
      )
    }

    const sqliteP50 = `SQLite node, same request: p50 ${sqliteStats.p50ms.toFixed(2)} ms`
    ctx.figures.push(
      {
        id: 'pg-redirect-hot-ratio',
        label: 'PostgreSQL node ÷ SQLite node: redirects of one hot code',
        value: hotRatio.ratio,
        unit: '×',
        target: { op: '>=', value: 0.8 },
        baseline: hotRatio.baseline,
      },
      {
        id: 'pg-redirect-1k-ratio',
        label: 'PostgreSQL node ÷ SQLite node: redirects over 1,000 codes',
        value: spreadRatio.ratio,
        unit: '×',
        target: { op: '>=', value: 0.8 },
        baseline: spreadRatio.baseline,
      },
      {
        id: 'pg-create-ratio',
        label: 'PostgreSQL node ÷ SQLite node: creations (getLink.json)',
        value: createRatio.ratio,
        unit: '×',
        target: { op: '>=', value: 0.5 },
        baseline: createRatio.baseline,
      },
      {
        id: 'pg-stats-365-p50',
        label: 'stats.json on PostgreSQL at 10M clicks, 365 days: p50',
        value: pgStats.p50ms,
        unit: 'ms',
        target: { op: '<=', value: 10 },
        baseline: sqliteP50,
      },
      {
        id: 'pg-stats-365-p99',
        label: 'stats.json on PostgreSQL at 10M clicks, 365 days: p99',
        value: pgStats.p99ms,
        unit: 'ms',
        baseline: `SQLite node: p99 ${sqliteStats.p99ms.toFixed(2)} ms`,
      },
      {
        id: 'pg-stats-365-moving-p50',
        label: 'stats.json on PostgreSQL, 365 days, a different window each request: p50',
        value: pgMoving.p50ms,
        unit: 'ms',
        baseline: `SQLite node: p50 ${sqliteMoving.p50ms.toFixed(2)} ms`,
      },
      {
        id: 'pg-two-nodes-ratio',
        label:
          'Two PostgreSQL nodes ÷ one: redirects over 1,000 codes (2 cores shared by both nodes, PostgreSQL and wrk)',
        value: median(twoRatios),
        unit: '×',
        baseline: `one node: ${Math.round(median(oneRps)).toLocaleString('en-US')} req/s`,
      },
    )
    lines.push(
      `PostgreSQL ÷ SQLite, median over ${ctx.rounds} rounds of ${ctx.seconds} s (wrk -t2 -c64, order swapped each round): ` +
        `one hot code ${hotRatio.ratio.toFixed(2)}, 1,000 codes ${spreadRatio.ratio.toFixed(2)}, creations ${createRatio.ratio.toFixed(2)}`,
    )
    lines.push(
      `stats.json (365 days, 10M clicks) on PostgreSQL: p50 ${pgStats.p50ms.toFixed(2)} ms (SQLite node ${sqliteStats.p50ms.toFixed(2)} ms); ` +
        `a different window each request ${pgMoving.p50ms.toFixed(2)} ms (SQLite node ${sqliteMoving.p50ms.toFixed(2)} ms); one request at a time (wrk -t1 -c1)`,
    )
    lines.push(
      `two nodes ÷ one node (1,000 codes; two wrk -t1 -c32 at once, summed, against one wrk -t2 -c64): median ${median(twoRatios).toFixed(2)}`,
    )
    lines.push(
      `this machine has ${navigator.hardwareConcurrency} cores: the two nodes share them with each other, with PostgreSQL and with wrk (one node's ` +
        'JavaScript runs on one core, so a second node can use what is left of the others); two nodes on machines of their own would not be bounded by these cores',
    )
    if (errors) lines.push(`ERRORS: ${errors} answers were not 2xx/3xx`)
  } finally {
    for (const s of servers) await s.stop().catch(() => {})
    await pg?.stop()
  }
  return lines
}
