// The bench's pure helpers: reading wrk's output, judging a figure against its target, the RESULTS.md
// table, and the loader's code permutation and exact splits (a wrong one would bench the wrong thing);
// and the mail bench's own SMTP client, which must count as accepted only what a server really accepted;
// and the media bench's curl client, which must not count a short or failed download as a fast one;
// and the webhooks bench's receiver, whose count is the deliveries/s figure.
import { Database } from 'bun:sqlite'
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { migrations } from '../../src/db/sqlite/migrations'
import { load, nthCode, seeded, split } from '../../scripts/bench/load'
import {
  apiPost,
  createAccount,
  removeDir,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
} from '../support/server'
import {
  formatFigure,
  formatValue,
  met,
  resultsMarkdown,
  resultsTable,
  roundsDisagree,
  type Run,
} from '../../scripts/bench/results'
import { parseWrk } from '../../scripts/bench/wrk'
import { startBareSmtp, startMailBox, type MailBox } from '../../scripts/bench/mail'
import { quantile, replyReader, smallMessage, smtpLoad } from '../../scripts/bench/smtp-load'
import { alternating, curlGets, parseCurl, throughput } from '../../scripts/bench/curl'
import { createEndpoint, drain, startReceiver } from '../../scripts/bench/webhooks'
import { checkRedirects, loadedUrl, summed } from '../../scripts/bench/postgres'

const WRK_OUTPUT = `Running 4s test @ http://127.0.0.1:40123
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.61ms    1.02ms  31.40ms   91.20%
    Req/Sec    12.40k     1.10k   14.01k    70.00%
  Latency Distribution
     50%    2.41ms
     75%    2.90ms
     90%    3.50ms
     99%    1.20s
  98765 requests in 4.00s, 10.10MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 7
Requests/sec:  24691.25
Transfer/sec:      2.52MB
`

describe('parseWrk', () => {
  test('throughput, percentiles in ms whatever unit wrk chose, and every kind of error', () => {
    expect(parseWrk(WRK_OUTPUT)).toEqual({ rps: 24691.25, p50ms: 2.41, p99ms: 1200, errors: 12 })
  })
  test('microseconds, and no error lines', () => {
    const out = WRK_OUTPUT.replace('2.41ms', '812.00us').replace(/ {2}Socket errors.*\n {2}Non-2xx.*\n/, '')
    const r = parseWrk(out)
    expect(r.p50ms).toBeCloseTo(0.812, 6)
    expect(r.errors).toBe(0)
  })
})

describe('figures and the table', () => {
  test('met: each direction, no target, and a figure that could not be measured', () => {
    expect(met({ value: 0.8, target: { op: '>=', value: 0.8 } })).toBe(true)
    expect(met({ value: 0.79, target: { op: '>=', value: 0.8 } })).toBe(false)
    expect(met({ value: 3.1, target: { op: '<=', value: 3 } })).toBe(false)
    expect(met({ value: 5 })).toBeNull()
    expect(met({ value: NaN, target: { op: '<=', value: 3 } })).toBeNull()
  })
  test('values keep their unit and a precision that suits it', () => {
    expect(formatValue(0.456, '×')).toBe('0.46×')
    expect(formatValue(2.345, 'ms')).toBe('2.35 ms')
    expect(formatValue(86.04, 'ms')).toBe('86.0 ms')
    expect(formatValue(17086 / 1024, 'KB')).toBe('17 KB')
    expect(formatValue(NaN, 'ms')).toBe('n/a')
  })
  test('the before column is matched by id; a figure it lacks says so; pipes are escaped', () => {
    const before: Run = {
      binary: 'commit 8e060d8',
      version: '0.1.0',
      commit: '8e060d8',
      date: '',
      machine: '',
      figures: [{ id: 'a', label: 'A', value: 0.2, unit: '×', target: { op: '>=', value: 0.8 } }],
    }
    const table = resultsTable(
      [
        { id: 'a', label: 'A', value: 0.9, unit: '×', target: { op: '>=', value: 0.8 }, baseline: 'bare: 1 req/s' },
        { id: 'b', label: 'B | new', value: 12, unit: 'ms' },
      ],
      before,
    ).split('\n')
    expect(table[0]).toBe('| figure | target | before (commit 8e060d8) | now | met now | baseline in this run |')
    expect(table[2]).toBe('| A | ≥ 0.80× | 0.20× (missed) | 0.90× | met | bare: 1 req/s |')
    expect(table[3]).toBe('| B \\| new | — | not measured | 12.0 ms | — |  |')
  })
  test("a figure's rounds: their range beside the median, and a verdict not every round agrees with is marked", () => {
    expect(formatFigure({ value: 0.49, unit: '×', rounds: [0.27, 0.78, 0.49] })).toBe('0.49× (rounds 0.27–0.78×)')
    expect(formatFigure({ value: 87.9, unit: 'ms', rounds: [68.4, 87.9, 91.2] })).toBe('87.9 ms (rounds 68.4–91.2 ms)')
    expect(formatFigure({ value: 0.49, unit: '×', rounds: [0.49] })).toBe('0.49×')
    expect(formatFigure({ value: 0.49, unit: '×' })).toBe('0.49×')
    const target = { op: '>=' as const, value: 0.8 }
    expect(roundsDisagree({ target, rounds: [0.79, 0.86, 0.8] })).toBe(true)
    expect(roundsDisagree({ target, rounds: [0.81, 0.86, 0.8] })).toBe(false)
    expect(roundsDisagree({ target, rounds: [0.5, 0.6] })).toBe(false)
    expect(roundsDisagree({ rounds: [0.1, 0.9] })).toBeNull()
    expect(roundsDisagree({ target })).toBeNull()
    const rows = resultsTable([
      { id: 'a', label: 'A', value: 0.795, unit: '×', target, rounds: [0.79, 0.795, 0.86] },
      { id: 'b', label: 'B', value: 0.86, unit: '×', target, rounds: [0.79, 0.86, 0.9] },
      { id: 'c', label: 'C', value: 0.5, unit: '×', target, rounds: [0.4, 0.5, 0.6] },
    ]).split('\n')
    expect(rows[2]).toBe('| A | ≥ 0.80× | 0.80× (rounds 0.79–0.86×) | **missed** (met in some rounds) |  |')
    expect(rows[3]).toBe('| B | ≥ 0.80× | 0.86× (rounds 0.79–0.90×) | met (not in every round) |  |')
    expect(rows[4]).toBe('| C | ≥ 0.80× | 0.50× (rounds 0.40–0.60×) | **missed** |  |')
    const run: Run = {
      binary: 'x',
      version: '0',
      commit: 'c',
      date: 'd',
      machine: 'm',
      figures: [
        { id: 'a', label: 'A', value: 0.795, unit: '×', target, rounds: [0.79, 0.795, 0.86] },
        { id: 'c', label: 'C', value: 0.5, unit: '×', target, rounds: [0.4, 0.5, 0.6] },
      ],
    }
    const md = resultsMarkdown({ run, commands: [], sections: [], seconds: 4, rounds: 3, totalSeconds: 1 })
    expect(md).toContain('0 of 2 targets met in this run; missed: A; C.')
    expect(md).toContain(
      '1 of these verdicts rests on rounds that disagree (some rounds met the target, some missed it)',
    )
    expect(md).toMatch(/another run may turn them: A\.\n/)
    const steady = resultsMarkdown({
      run: { ...run, figures: [run.figures[1]!] },
      commands: [],
      sections: [],
      seconds: 4,
      rounds: 3,
      totalSeconds: 1,
    })
    expect(steady).not.toContain('rounds that disagree')
    const two = resultsMarkdown({
      run: { ...run, figures: [run.figures[0]!, { ...run.figures[0]!, id: 'b', label: 'B' }] },
      commands: [],
      sections: [],
      seconds: 4,
      rounds: 3,
      totalSeconds: 1,
    })
    expect(two).toContain('2 of these verdicts rest on rounds that disagree')
    expect(two).toMatch(/another run may turn them: A; B\.\n/)
  })
  test("issue 21's rows come first, in its order; the others keep the order they were measured in", () => {
    const fig = (id: string) => ({ id, label: id, value: 1, unit: '×' })
    const measured = [
      'mail',
      'startup-serve',
      'redirect-1k-ratio',
      'stats',
      'create-ratio',
      'redirect-hot-ratio',
      'lists',
    ].map(fig)
    const rows = resultsTable(measured)
      .split('\n')
      .slice(2)
      .map((r) => r.split(' | ')[0]!.slice(2))
    expect(rows).toEqual([
      'redirect-hot-ratio',
      'redirect-1k-ratio',
      'create-ratio',
      'startup-serve',
      'mail',
      'stats',
      'lists',
    ])
  })
})

describe('bulk loader helpers', () => {
  test('codes: 6 characters of base62, distinct over the first 200,000', () => {
    const codes = new Set<string>()
    for (let i = 0; i < 200_000; i++) codes.add(nthCode(i))
    expect(codes.size).toBe(200_000)
    for (const c of [...codes].slice(0, 1000)) expect(c).toMatch(/^[A-Za-z0-9]{6}$/)
  })
  test('split adds up to the total exactly and keeps the order of the weights', () => {
    const rnd = seeded(1)
    for (const total of [0, 1, 7, 27_397, 10_000_000]) {
      const parts = split(total, [30, 18, 8, 1], rnd)
      expect(parts.reduce((a, b) => a + b, 0)).toBe(total)
      if (total > 1000) expect(parts[0]!).toBeGreaterThan(parts[3]!)
    }
  })
  test('the generator is seeded: the same seed gives the same data', () => {
    const a = seeded(42)
    const b = seeded(42)
    expect(Array.from({ length: 5 }, a)).toEqual(Array.from({ length: 5 }, b))
  })
})

test('load: the accounts, their links and a year of clicks in a database of the current schema', async () => {
  const dir = tempDir('linkbox-load-')
  try {
    const data = await load({ links: 300, clicks: 100_000, data: join(dir, 'data') })
    const db = new Database(join(dir, 'data/linkbox.db'), { readonly: true })
    try {
      expect((db.query('PRAGMA user_version').get() as { user_version: number }).user_version).toBe(migrations.length)
      const perAccount = db
        .query(
          'SELECT a.name, count(l.id) AS n FROM accounts a JOIN links l ON l.account_id = a.id GROUP BY a.name ORDER BY a.name',
        )
        .all()
      expect(perAccount).toEqual([
        { name: 'bench', n: 300 },
        { name: 'small', n: 100 },
      ])
      const clicked = db.query('SELECT id, clicks, bots FROM links WHERE code = ?').get(data.statsCode) as {
        id: number
        clicks: number
        bots: number
      }
      expect(clicked.id).toBe(data.benchFirstId)
      expect(clicked.clicks).toBe(100_000)
      expect(clicked.bots).toBeGreaterThan(0)
      const keys = db.query('SELECT count(*) AS n FROM api_keys').get() as { n: number }
      expect(keys.n).toBe(2)
    } finally {
      db.close()
    }
    const codes = readFileSync(join(dir, 'data/codes.txt'), 'utf8').trim().split('\n')
    expect(codes).toHaveLength(300)
    expect(codes[0]).toBe(data.statsCode)
    // The postgres bench expects each code of codes.txt to redirect to loadedUrl(its index).
    const again = new Database(join(dir, 'data/linkbox.db'), { readonly: true })
    try {
      for (const i of [0, 1, 150, 299])
        expect(again.query('SELECT long_url FROM links WHERE code = ?').get(codes[i]!)).toEqual({
          long_url: loadedUrl(i),
        })
    } finally {
      again.close()
    }
    expect(JSON.parse(readFileSync(join(dir, 'data/bench.json'), 'utf8'))).toEqual(data)
    await expect(load({ links: 1, data: join(dir, 'data') })).rejects.toThrow('is not empty')
  } finally {
    removeDir(dir)
  }
})

describe('the postgres bench', () => {
  test('two wrk runs at once count as one: throughputs and errors added, the worse percentiles, both commands', () => {
    const a = { rps: 1000, p50ms: 2, p99ms: 9, errors: 1, command: 'wrk A' }
    const b = { rps: 1500.5, p50ms: 3, p99ms: 7, errors: 0, command: 'wrk B' }
    expect(summed(a, b)).toEqual({ rps: 2500.5, p50ms: 3, p99ms: 9, errors: 1, command: 'wrk A & wrk B' })
  })
  test('checkRedirects passes right answers and throws on a wrong location or an unknown code, naming them', async () => {
    const box = await startServer()
    try {
      const key = await createAccount(box.configPath, 'bench')
      const made = await apiPost(box.url, 'getLink.json', { url: 'https://example.com/right' }, { 'x-api-key': key })
      expect(made.status).toBe(200)
      const code = made.body.return.hex as string
      await checkRedirects(box.url, new Map([[code, 'https://example.com/right']]), 'the server')
      await expect(
        checkRedirects(box.url, new Map([[code, 'https://example.com/wrong']]), 'the server'),
      ).rejects.toThrow(
        `the server answers 1 of 1 codes wrongly: /${code}: 302 https://example.com/right, expected 302 https://example.com/wrong`,
      )
      const unknown = code === 'zzzzzz' ? 'yyyyyy' : 'zzzzzz'
      await expect(
        checkRedirects(
          box.url,
          new Map([
            [code, 'https://example.com/right'],
            [unknown, 'https://example.com/right'],
          ]),
          'the server',
        ),
      ).rejects.toThrow(`the server answers 1 of 2 codes wrongly: /${unknown}: 404 (no location)`)
    } finally {
      await box.stop()
      removeDir(box.dir)
    }
  })
})

describe('the mail bench client', () => {
  test('replies: continuation lines join, a reply split across chunks waits for its end, each is stamped when complete', () => {
    let clock = 0
    const read = replyReader(() => ++clock)
    expect(read('220 bare ESMTP\r\n250-bare.test greets\r\n250-PIPELI')).toEqual([
      { code: 220, text: 'bare ESMTP', at: 1 },
    ])
    expect(read('NING\r\n250 SIZE 10485760\r')).toEqual([])
    expect(read('\n354 End data with <CR><LF>.<CR><LF>\r\n')).toEqual([
      { code: 250, text: 'bare.test greets\nPIPELINING\nSIZE 10485760', at: 2 },
      { code: 354, text: 'End data with <CR><LF>.<CR><LF>', at: 3 },
    ])
    expect(() => read('hello\r\n')).toThrow('not a reply line')
  })
  test('the p99 is a nearest rank: of 100 values the 99th, of 10 the largest', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1)
    expect(quantile(hundred, 0.99)).toBe(99)
    expect(quantile(hundred, 0.5)).toBe(50)
    expect(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.99)).toBe(10)
    expect(quantile([], 0.99)).toBeNaN()
  })
  test('a message is about 1 KB of CRLF lines, none starting with "." (it is sent without dot-stuffing)', () => {
    const m = smallMessage(12345, 'a@sender.test', 'b@bench.test')
    expect(m.length).toBeGreaterThan(900)
    expect(m.length).toBeLessThan(1200)
    expect(m.endsWith('\r\n')).toBe(true)
    expect(m.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/)
    expect(m.split('\r\n').some((l) => l.startsWith('.'))).toBe(false)
  })
})

describe('the mail bench against real servers', () => {
  test('the bare server answers every message 250; linkbox stores each message it acknowledges, and a refusal is no success', async () => {
    const bare = await startBareSmtp()
    let box: MailBox | undefined
    try {
      const b = await smtpLoad({ port: bare.port, connections: 2, seconds: 0.5, recipients: ['anyone@bare.test'] })
      expect(b.errors).toBe(0)
      expect(b.accepted).toBeGreaterThan(0)
      expect(b.p99ms).toBeGreaterThan(0)
      box = await startMailBox(undefined)
      const l = await smtpLoad({ port: box.smtpPort, connections: 3, seconds: 0.5, recipients: box.recipients })
      expect(l.firstError).toBeNull()
      expect(l.accepted).toBeGreaterThan(0)
      expect(await box.stored()).toBe(l.accepted)
      const refused = await smtpLoad({
        port: box.smtpPort,
        connections: 1,
        seconds: 0.2,
        recipients: ['nobody@bench.test'],
      })
      expect(refused.accepted).toBe(0)
      expect(refused.errors).toBeGreaterThan(0)
      expect(refused.firstError).toStartWith('envelope: 550 5.1.1')
      expect(await box.stored()).toBe(l.accepted)
    } finally {
      await box?.server.stop()
      await bare.stop()
    }
  }, 60_000)
})

describe('the media bench client', () => {
  test("curl's -w lines: status, bytes, seconds; anything else is an error, not a zero", () => {
    expect(parseCurl('200 16777216 0.021\n206 100 0.000512\n')).toEqual([
      { status: 200, bytes: 16777216, seconds: 0.021 },
      { status: 206, bytes: 100, seconds: 0.000512 },
    ])
    expect(() => parseCurl('200 16777216\n')).toThrow('not a curl -w line')
    expect(
      throughput([
        { status: 200, bytes: 3 * 1024 * 1024, seconds: 1 },
        { status: 200, bytes: 1024 * 1024, seconds: 1 },
      ]),
    ).toBe(2)
  })
  test('every transfer must be a 200 of the full size; the URLs are taken in turn, from the one asked first', async () => {
    const body = new Uint8Array(100_000).fill(7)
    const seen: string[] = []
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch(req) {
        const path = new URL(req.url).pathname
        seen.push(path)
        if (path === '/short') return new Response(body.subarray(0, 99_999))
        if (path === '/missing') return new Response(body, { status: 404 })
        return new Response(body)
      },
    })
    const url = (p: string) => `http://127.0.0.1:${server.port}${p}`
    try {
      const ok = await curlGets([url('/a'), url('/a')], body.length)
      expect(ok.map((t) => [t.status, t.bytes])).toEqual([
        [200, 100_000],
        [200, 100_000],
      ])
      await expect(curlGets([url('/short')], body.length)).rejects.toThrow(
        'gave HTTP 200 with 99999 bytes, 100000 expected',
      )
      await expect(curlGets([url('/missing')], body.length)).rejects.toThrow('gave HTTP 404')
      seen.length = 0
      const rates = await alternating([url('/a'), url('/b'), url('/c')], 2, body.length, 1)
      expect(seen).toEqual(['/b', '/c', '/a', '/b', '/c', '/a'])
      expect(rates).toHaveLength(3)
      for (const r of rates) expect(r).toBeGreaterThan(0)
    } finally {
      server.stop(true)
    }
  })
})

describe('the webhooks bench receiver', () => {
  const post = (url: string, body: string, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      body,
      headers: { 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x', ...headers },
    })

  test('counts requests, bytes and event types; a request without the headers or an event body is malformed; unknown types stay "other"', async () => {
    const r = startReceiver()
    try {
      const event = JSON.stringify({ type: 'link.created', timestamp: '2025-01-01T00:00:00.000Z', data: {} })
      expect((await post(r.url, event)).status).toBe(200)
      await post(r.url, JSON.stringify({ type: 'link.clicked', data: {} }))
      await post(r.url, JSON.stringify({ type: 'x'.repeat(50), data: {} }))
      await post(r.url, 'not json')
      await fetch(r.url, { method: 'POST', body: event })
      expect(r.requests).toBe(5)
      expect(r.count('link.created')).toBe(2)
      expect(r.count('link.clicked')).toBe(1)
      expect(r.count('other')).toBe(2)
      expect(r.malformed).toBe(3)
      expect(r.bytes).toBe(
        2 * event.length +
          JSON.stringify({ type: 'link.clicked', data: {} }).length +
          JSON.stringify({ type: 'x'.repeat(50), data: {} }).length +
          8,
      )
    } finally {
      r.stop()
    }
  })

  test('held answers wait for release(); until() resolves once the count is reached and rejects when it is not', async () => {
    const r = startReceiver()
    try {
      r.hold()
      let answered = false
      const first = post(r.url, '{}').then((res) => ((answered = true), res.status))
      await r.until(1, 5_000)
      await Bun.sleep(50)
      expect(answered).toBe(false)
      const reached = r.until(2, 5_000)
      void post(r.url, '{}')
      expect(await reached).toBeGreaterThan(0)
      r.release()
      expect(await first).toBe(200)
      await expect(r.until(3, 100)).rejects.toThrow('the receiver got 2 requests, 3 awaited')
    } finally {
      r.stop()
    }
  })

  test('drain against linkbox: every committed link.created event is delivered, and only then does it resolve', async () => {
    const r = startReceiver()
    let box: RunningServer | undefined
    try {
      box = await startServer({ config: writeConfig(undefined, { media: { allow_private_networks: true } }) })
      const key = await createAccount(box.configPath, 'bench')
      await createEndpoint(box, key, `${r.url}/created`, 'link.created')
      const d = await drain(box, key, r, 20)
      expect(r.requests).toBe(20)
      expect(r.count('link.created')).toBe(20)
      expect(r.malformed).toBe(0)
      expect(d.rate).toBeGreaterThan(0)
      const list = await apiPost(box.url, 'webhooks.json', { action: 'list' }, { 'x-api-key': key })
      expect(list.body.return.webhooks[0].deliveries.ok + list.body.return.webhooks[0].deliveries.pending).toBe(20)
    } finally {
      await box?.stop()
      r.stop()
    }
  }, 60_000)
})

test('RESULTS.md names no path of the machine that ran it: the checkout is ".", the home "~", the temp folder $TMPDIR', async () => {
  const { withoutMachinePaths } = await import('../../scripts/bench/results')
  const { homedir, tmpdir } = await import('node:os')
  const text = `wrk -s /srv/co/scripts/bench/post.lua -- ${tmpdir()}/linkbox-bench-x/codes.txt; ${homedir()}/.pyenv/shims/python3`
  expect(withoutMachinePaths(text, '/srv/co')).toBe(
    'wrk -s ./scripts/bench/post.lua -- $TMPDIR/linkbox-bench-x/codes.txt; ~/.pyenv/shims/python3',
  )
})

test("the bench's servers write their output to a file: the start is found there, the request lines land there, stdout() reads it", async () => {
  const { startBenchServer } = await import('../../scripts/bench/binary')
  const box = await startBenchServer({})
  try {
    expect(box.stdout()).toContain('listening on')
    const r = await fetch(`${box.url}/healthz`)
    expect(r.status).toBe(200)
    // Request lines are written in batches (at most 100 ms after the first): the stop drains them.
    await box.stop()
    const written = readFileSync(join(box.dir, 'stdout.log'), 'utf8')
    expect(written).toContain('listening on')
    expect(written).toContain('"path":"/healthz"')
    expect(box.stdout()).toBe(written)
  } finally {
    await box.stop()
    removeDir(box.dir)
  }
})
