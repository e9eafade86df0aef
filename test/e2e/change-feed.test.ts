// The change feed between nodes (src/db/changes.ts, src/db/postgres/changes.ts; issue 22, SPEC §11: a change
// on one node is seen by every node within 1 s). Two feeds on two pools of one real PostgreSQL database are two
// nodes; the server is restarted and the listening connection killed under them. The SQLite feed is one
// process's and delivers in-process.
import { afterEach, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { SQL } from 'bun'
import { localChangeFeed } from '../../src/db/changes'
import {
  CHANNEL,
  decodeChange,
  encodeChanges,
  MAX_PAYLOAD_BYTES,
  postgresChangeFeed,
  RESYNC_OVER,
} from '../../src/db/postgres/changes'
import { postgresForFile, type Postgres } from '../support/postgres'

let pg: Postgres
const unhandled = postgresForFile((started) => (pg = started))

/** What a subscriber was told, in order, with when (performance.now()). */
function recorder() {
  const seen: { keys?: readonly string[]; resync?: true; at: number }[] = []
  return {
    seen,
    onKeys: (keys: readonly string[]) => void seen.push({ keys, at: performance.now() }),
    onResync: () => void seen.push({ resync: true, at: performance.now() }),
    keys: () => seen.flatMap((s) => s.keys ?? []),
    resyncs: () => seen.filter((s) => s.resync).length,
  }
}

async function until(what: string, ok: () => boolean, ms = 5_000) {
  const end = performance.now() + ms
  while (!ok()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`)
    await Bun.sleep(5)
  }
}

describe('SQLite: the feed of one process', () => {
  test('publish tells every subscriber of the topic before it returns, and nobody else; unsubscribe stops it', async () => {
    const feed = localChangeFeed()
    const links = recorder()
    const links2 = recorder()
    const accounts = recorder()
    const off = feed.subscribe('link', links.onKeys, links.onResync)
    feed.subscribe('link', links2.onKeys, links2.onResync)
    feed.subscribe('account', accounts.onKeys, accounts.onResync)
    feed.publish('link', ['abc', 'd"é😀'])
    // Synchronous: seen before publish returned, with no await in between.
    expect(links.keys()).toEqual(['abc', 'd"é😀'])
    expect(links2.keys()).toEqual(['abc', 'd"é😀'])
    expect(accounts.seen).toEqual([])
    feed.publish('link', [])
    expect(links.seen.length).toBe(1)
    off()
    feed.publish('link', ['x'])
    expect(links.keys()).toEqual(['abc', 'd"é😀'])
    expect(links2.keys()).toEqual(['abc', 'd"é😀', 'x'])
    expect(links.resyncs()).toBe(0)
    await feed.close()
    feed.publish('link', ['after-close'])
    expect(links2.keys()).not.toContain('after-close')
  })

  test('a subscriber that throws reaches neither the publisher nor the other subscribers', async () => {
    const errors: unknown[] = []
    const feed = localChangeFeed({ onError: (err) => errors.push(err) })
    const after = recorder()
    feed.subscribe(
      'link',
      () => {
        throw new Error('broken cache')
      },
      () => {},
    )
    feed.subscribe('link', after.onKeys, after.onResync)
    expect(() => feed.publish('link', ['k'])).not.toThrow()
    expect(after.keys()).toEqual(['k'])
    expect(String(errors[0])).toContain('broken cache')
    expect(() => feed.publish('Link; DROP', ['k'])).toThrow(/not a topic name/)
    await feed.close()
  })
})

describe("messages: JSON under PostgreSQL's 8000-byte limit", () => {
  const awkward = [
    'a"b',
    "it's",
    'back\\slash',
    'nul\u0000ctl\u001f',
    'é',
    '😀',
    '\u2028',
    'ﬁ',
    '<script>',
    '%_',
    ' sp ace ',
  ]

  test('any key round trips; keys are packed into messages of at most MAX_PAYLOAD_BYTES bytes', () => {
    const keys = [...awkward, ...Array.from({ length: 900 }, (_, i) => `é${'😀'.repeat(i % 7)}-${i}`)]
    const payloads = encodeChanges('o1', 'link', keys)
    expect(payloads.length).toBeGreaterThan(1)
    const back: string[] = []
    for (const p of payloads) {
      expect(Buffer.byteLength(p, 'utf8')).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES)
      const m = decodeChange(p)!
      expect(m).toMatchObject({ o: 'o1', t: 'link' })
      back.push(...(m as { k: string[] }).k)
    }
    expect(back).toEqual(keys)
  })

  test('more than RESYNC_OVER keys, or one key too long for a message, is one resync of the topic', () => {
    const many = Array.from({ length: RESYNC_OVER + 1 }, (_, i) => `k${i}`)
    expect(encodeChanges('o1', 'link', many).map(decodeChange)).toEqual([{ o: 'o1', t: 'link', r: 1 }])
    expect(
      encodeChanges(
        'o1',
        'link',
        Array.from({ length: RESYNC_OVER }, (_, i) => `k${i}`),
      ).length,
    ).toBe(1)
    expect(encodeChanges('o1', 'link', ['ok', 'é'.repeat(4_000)]).map(decodeChange)).toEqual([
      { o: 'o1', t: 'link', r: 1 },
    ])
  })

  test('anything else on the channel is not a message', () => {
    for (const junk of [
      '',
      'hello',
      '{}',
      '[1]',
      'null',
      '{"o":1,"t":"link","k":[]}',
      '{"o":"x","t":"link","k":[1]}',
      '{"o":"x","t":"link"}',
    ])
      expect(decodeChange(junk)).toBeNull()
  })
})

describe('PostgreSQL: two nodes', () => {
  const open: { close(): Promise<void> }[] = []
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close()
    expect(unhandled).toEqual([])
  })
  /** Two nodes on one fresh database: a pool and a feed each (heartbeat as in production unless given). */
  async function twoNodes(opts: { heartbeatMs?: number } = {}) {
    const url = await pg.createDatabase()
    const node = async () => {
      const sql = new Bun.SQL(url, { max: 2, connectionTimeout: 2 })
      open.push({ close: () => sql.close() })
      const feed = await postgresChangeFeed(sql, opts)
      open.push(feed)
      return { sql, feed }
    }
    return { url, a: await node(), b: await node() }
  }
  /** The backend pids listening on CHANNEL in this database (one per node's feed). */
  const listeners = async (sql: SQL) =>
    (
      await sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = ${`LISTEN "${CHANNEL}"`}`
    ).map((r: { pid: number }) => Number(r.pid))

  test("a key published on A reaches B within 1 s (typically a few ms); A's own subscriber hears it once, at once", async () => {
    const { a, b } = await twoNodes()
    const onA = recorder()
    const onB = recorder()
    a.feed.subscribe('link', onA.onKeys, onA.onResync)
    b.feed.subscribe('link', onB.onKeys, onB.onResync)
    const delays: number[] = []
    for (let i = 0; i < 20; i++) {
      const started = performance.now()
      a.feed.publish('link', [`code${i}`])
      expect(onA.keys()).toContain(`code${i}`)
      await until(`code${i} on B`, () => onB.keys().includes(`code${i}`), 1_000)
      delays.push(onB.seen.at(-1)!.at - started)
    }
    delays.sort((x, y) => x - y)
    console.log(`change feed A → B: median ${delays[10]!.toFixed(1)} ms, max ${delays.at(-1)!.toFixed(1)} ms over 20`)
    expect(delays.at(-1)!).toBeLessThan(1_000)
    await Bun.sleep(200)
    // A's echo from the server is skipped: one delivery per key on each node.
    expect(onA.keys()).toEqual(Array.from({ length: 20 }, (_, i) => `code${i}`))
    expect(onB.keys()).toEqual(Array.from({ length: 20 }, (_, i) => `code${i}`))
    expect(onA.resyncs() + onB.resyncs()).toBe(0)
  })

  test('idle nodes with a fast heartbeat never resync: a heartbeat that comes back is never taken for a lost listen', async () => {
    const { a, b } = await twoNodes({ heartbeatMs: 20 })
    const onA = recorder()
    const onB = recorder()
    a.feed.subscribe('link', onA.onKeys, onA.onResync)
    b.feed.subscribe('link', onB.onKeys, onB.onResync)
    await Bun.sleep(3_000) // ~150 heartbeats each
    expect(onA.resyncs() + onB.resyncs()).toBe(0)
  })

  test('1,000 keys at once arrive completely, in several messages; 1,001 arrive as a resync of the topic alone', async () => {
    const { a, b } = await twoNodes()
    const onB = recorder()
    const accountsOnB = recorder()
    b.feed.subscribe('link', onB.onKeys, onB.onResync)
    b.feed.subscribe('account', accountsOnB.onKeys, accountsOnB.onResync)
    const keys = Array.from({ length: RESYNC_OVER }, (_, i) => `k-${i}-${'x'.repeat(20)}`)
    a.feed.publish('link', keys)
    await until('1,000 keys on B', () => onB.keys().length >= keys.length, 2_000)
    expect(new Set(onB.keys())).toEqual(new Set(keys))
    expect(onB.seen.length).toBeGreaterThan(1)
    expect(onB.resyncs()).toBe(0)
    a.feed.publish('link', [...keys, 'one-more'])
    await until('resync on B', () => onB.resyncs() === 1, 2_000)
    expect(onB.keys().length).toBe(keys.length)
    expect(accountsOnB.seen).toEqual([])
  })

  test('codes with quotes, backslashes, unicode and control characters round trip; a long multibyte key too', async () => {
    const { a, b } = await twoNodes()
    const onB = recorder()
    b.feed.subscribe('link', onB.onKeys, onB.onResync)
    const keys = [
      'a"b',
      "it's",
      'back\\slash',
      'nul\u0000ctl\u001f',
      'é',
      '😀',
      '\u2028',
      '$1',
      "'); NOTIFY x; --",
      'é'.repeat(3_000),
    ]
    a.feed.publish('link', keys)
    await until('keys on B', () => onB.keys().length >= keys.length, 2_000)
    expect(onB.keys()).toEqual(keys)
  })

  test('what another program sends on the channel is ignored', async () => {
    const { a, b } = await twoNodes()
    const onB = recorder()
    b.feed.subscribe('link', onB.onKeys, onB.onResync)
    for (const junk of ['hello', '{"t":"link","k":["x"]}', '{"o":"z","t":"link","k":[7]}'])
      await a.sql.notify(CHANNEL, junk)
    a.feed.publish('link', ['real'])
    await until('real on B', () => onB.keys().includes('real'), 1_000)
    expect(onB.keys()).toEqual(['real'])
  })

  test("the server restarted: B's subscribers resync within ~2 s of its return, then hear new keys again", async () => {
    const { a, b } = await twoNodes()
    const onB = recorder()
    const settingsOnB = recorder()
    b.feed.subscribe('link', onB.onKeys, onB.onResync)
    b.feed.subscribe('settings', settingsOnB.onKeys, settingsOnB.onResync)
    a.feed.publish('link', ['before'])
    await until('before on B', () => onB.keys().includes('before'), 1_000)
    await pg.halt('fast')
    await Bun.sleep(4_000) // long enough for Bun's own reconnect of the listen to back off to seconds (its next try ~7.5 s after the stop)
    const back = performance.now()
    await pg.resume()
    // Within ~2 s of the server's return, by the feed's heartbeat (Bun's own reconnect would be ~3 s away by now).
    await until('resync on B', () => onB.resyncs() >= 1 && settingsOnB.resyncs() >= 1, 2_500)
    console.log(
      `change feed: B resynced ${(onB.seen.find((s) => s.resync)!.at - back).toFixed(0)} ms after the server was back`,
    )
    a.feed.publish('link', ['after'])
    await until('after on B', () => onB.keys().includes('after'), 1_000)
    expect(onB.keys().filter((k) => k === 'after').length).toBe(1)
  }, 30_000)

  test('a publish made while the node cannot reach the server is sent once it can', async () => {
    const { url, a } = await twoNodes()
    const name = new URL(url).pathname.slice(1)
    // C: a listen that stays up while A's pool is cut off (its connections ended, new ones refused).
    const c = new Bun.SQL(url, { max: 1 })
    open.push({ close: () => c.close() })
    const heard: string[] = []
    await c.listen(CHANNEL, (payload) => void heard.push(payload))
    const admin = new Bun.SQL(pg.url, { max: 1 })
    open.push({ close: () => admin.close() })
    await admin.unsafe(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`)
    await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND query <> ${`LISTEN "${CHANNEL}"`}`
    await expect(a.sql`SELECT 1`).rejects.toThrow(/not currently accepting connections/)
    a.feed.publish('link', ['during', 'd"é'])
    await Bun.sleep(1_500) // a heartbeat tries, and fails
    const changes = () => heard.map(decodeChange).filter((m) => m && 'k' in m)
    expect(changes()).toEqual([])
    await admin.unsafe(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`)
    await until('the kept keys on C', () => changes().length > 0, 3_000)
    expect(changes()).toEqual([{ o: expect.any(String), t: 'link', k: ['during', 'd"é'] }])
  }, 30_000)

  test("B's listening connection terminated (pg_terminate_backend): B resyncs, then hears new keys again", async () => {
    const { a, b } = await twoNodes()
    const onB = recorder()
    b.feed.subscribe('link', onB.onKeys, onB.onResync)
    // Both nodes' listening connections (which is whose does not show in pg_stat_activity): both come back.
    const pids = await listeners(a.sql)
    expect(pids.length).toBe(2)
    const killed = performance.now()
    for (const pid of pids) await a.sql`SELECT pg_terminate_backend(${pid})`
    await until('resync on B', () => onB.resyncs() >= 1, 5_000)
    console.log(
      `change feed: B resynced ${(onB.seen.find((s) => s.resync)!.at - killed).toFixed(0)} ms after its listening connection was terminated`,
    )
    a.feed.publish('link', ['after'])
    await until('after on B', () => onB.keys().includes('after'), 1_000)
    // A's listen comes back too (A's subscriber is not asserted on: its resync may follow B's).
    let now = await listeners(a.sql)
    for (let i = 0; i < 150 && now.length !== 2; i++) {
      await Bun.sleep(20)
      now = await listeners(a.sql)
    }
    expect(now.length).toBe(2)
    expect(now.some((pid: number) => pids.includes(pid))).toBe(false)
  }, 30_000)

  test('a listening connection that goes silent (its server process stopped, the socket still open) is found by the heartbeat and replaced', async () => {
    const { a, b } = await twoNodes()
    const onB = recorder()
    b.feed.subscribe('link', onB.onKeys, onB.onResync)
    const pids = await listeners(a.sql)
    expect(pids.length).toBe(2)
    // SIGSTOP: the backends hold their sockets and answer nothing, as behind a firewall that dropped the flow.
    for (const pid of pids) process.kill(pid, 'SIGSTOP')
    try {
      const silenced = performance.now()
      await until('resync on B', () => onB.resyncs() >= 1, 5_000)
      console.log(
        `change feed: B resynced ${(onB.seen.find((s) => s.resync)!.at - silenced).toFixed(0)} ms after its listening connection went silent`,
      )
      a.feed.publish('link', ['after'])
      await until('after on B', () => onB.keys().includes('after'), 1_000)
    } finally {
      for (const pid of pids) process.kill(pid, 'SIGCONT')
    }
  }, 30_000)

  test('a feed made from a database.url has a pool of its own, and close() closes it', async () => {
    const { url, b } = await twoNodes()
    const onB = recorder()
    b.feed.subscribe('link', onB.onKeys, onB.onResync)
    const c = await postgresChangeFeed(url)
    open.push(c)
    c.publish('link', ['from-c'])
    await until('from-c on B', () => onB.keys().includes('from-c'), 1_000)
    expect((await listeners(b.sql)).length).toBe(3)
    await c.close()
    let left = await listeners(b.sql)
    for (let i = 0; i < 50 && left.length !== 2; i++) {
      await Bun.sleep(20)
      left = await listeners(b.sql)
    }
    expect(left.length).toBe(2) // its pool is closed with it: see the process test at the end, which exits
    await expect(postgresChangeFeed(url.replace(`:${pg.port}/`, ':1/'))).rejects.toMatchObject({
      code: 'ERR_POSTGRES_CONNECTION_REFUSED',
    })
  })

  test('close() stops the heartbeat: nothing more is sent on the channel', async () => {
    const { url, a } = await twoNodes({ heartbeatMs: 100 })
    const c = new Bun.SQL(url, { max: 1 })
    open.push({ close: () => c.close() })
    const heard: { o: string; at: number }[] = []
    await c.listen(
      CHANNEL,
      (payload) => void heard.push({ o: (decodeChange(payload) as { o: string }).o, at: performance.now() }),
    )
    await until('heartbeats', () => heard.length >= 4, 2_000)
    const origins = new Set(heard.map((h) => h.o))
    expect(origins.size).toBe(2) // both nodes beat
    await a.feed.close()
    const closed = performance.now()
    await Bun.sleep(600)
    const after = heard.filter((h) => h.at > closed + 50)
    expect(after.length).toBeGreaterThan(0) // B still beats…
    expect(new Set(after.map((h) => h.o)).size).toBe(1) // …and A no more
  })

  test('close() stops listening: the LISTEN connection is gone from the server', async () => {
    const { a, b } = await twoNodes()
    expect((await listeners(a.sql)).length).toBe(2)
    await b.feed.close()
    await b.feed.close() // twice: nothing happens
    let left = await listeners(a.sql)
    for (let i = 0; i < 50 && left.length !== 1; i++) {
      await Bun.sleep(20)
      left = await listeners(a.sql)
    }
    expect(left.length).toBe(1)
  })
})

test('a process whose feeds and health are closed exits by itself: nothing they hold keeps it alive, nothing on stderr, no unhandled rejection', async () => {
  const url = await pg.createDatabase()
  const src = join(import.meta.dir, '../..', 'src', 'db')
  const script = `
    const { postgresChangeFeed } = await import(${JSON.stringify(join(src, 'postgres', 'changes.ts'))})
    const { postgresHealth } = await import(${JSON.stringify(join(src, 'postgres', 'health.ts'))})
    const { localChangeFeed } = await import(${JSON.stringify(join(src, 'changes.ts'))})
    process.on('unhandledRejection', (e) => { console.log('unhandled', e); process.exit(3) })
    const sql = new Bun.SQL(${JSON.stringify(url)}, { max: 2 })
    const feed = await postgresChangeFeed(sql)
    let heard = 0
    feed.subscribe('link', () => heard++, () => {})
    const other = await postgresChangeFeed(sql)
    other.subscribe('link', () => heard++, () => {})
    const byUrl = await postgresChangeFeed(${JSON.stringify(url)})
    byUrl.subscribe('link', () => heard++, () => {})
    feed.publish('link', ['x'])
    const health = postgresHealth(sql)
    health.observe(Object.assign(new Error('gone'), { code: 'ERR_POSTGRES_CONNECTION_CLOSED' }))
    await Bun.sleep(1500) // heartbeats and a probe have run
    await feed.close(); await other.close(); await byUrl.close(); health.close(); localChangeFeed().close()
    await sql.close()
    console.log('closed ' + heard + ' ' + health.isUp())
  `
  const started = performance.now()
  const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' })
  const killer = setTimeout(() => child.kill(), 15_000)
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  clearTimeout(killer)
  expect({ out: out.trim(), err: err.trim(), code }).toEqual({ out: 'closed 3 true', err: '', code: 0 })
  expect(performance.now() - started).toBeLessThan(10_000)
}, 30_000)
