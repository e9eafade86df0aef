// Imports (issue 36 item 4: a 10 MiB import.json of junk rows took 63 s and 5.15 GB, and redirects waited up
// to 30 s meanwhile). Three files, each sent to import.json while redirects of one hot code are measured:
// 50,000 valid rows (links.import_max_rows, the most a file may hold), 10 MiB of junk rows (the largest body
// taken; refused by its row count) and 20 MiB of junk (over the body limit: refused at once). For each: the
// time to the answer, the redirects' p99 while it runs (CONCURRENCY fetch loops on loopback, each redirect
// timed alone, only those that began while the import ran), and the memory it added (the server's RSS,
// sampled every 50 ms, peak minus before). Each file once per round; the figures are the worst round's.
import { join } from 'node:path'
import { apiPost, createAccount, type RunningServer } from '../../test/support/server'
import { serveCopy } from './binary'
import { mib, type BenchContext } from './context'
import { median, peakRss, rssMiB } from './wrk'

const CONCURRENCY = 16
const ROWS = 50_000

/**
 * Redirect latencies (ms) of `url` from a process of its own (redirect-loop.ts), CONCURRENCY at a time, of
 * the requests begun while `run` ran: the loops start first, then `run`, and the samples of its window count.
 */
async function redirectsDuring<T>(
  url: string,
  run: () => Promise<T>,
): Promise<{ result: T; ms: number[]; errors: number }> {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, 'redirect-loop.ts'), url, String(CONCURRENCY)], {
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const out = new Response(proc.stdout).text()
  // The loops run for 500 ms before the window opens (started, connected, warm).
  await Bun.sleep(500)
  const from = performance.timeOrigin + performance.now()
  let result: T | undefined
  let failure: unknown = null
  try {
    result = await run()
  } catch (err) {
    failure = err
  }
  const to = performance.timeOrigin + performance.now()
  await Bun.sleep(50)
  proc.kill('SIGTERM')
  await proc.exited
  const samples = (JSON.parse((await out).trim().split('\n').pop()!) as [number, number, number][]).filter(
    ([at]) => at >= from && at <= to,
  )
  if (failure) throw failure
  return { result: result as T, ms: samples.map((s) => s[1]), errors: samples.filter((s) => s[2] !== 302).length }
}
const p99 = (xs: number[]) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))] ?? NaN

interface Case {
  id: string
  label: string
  /** The body (multipart: the file and its format) of round `round`. */
  body(round: number): FormData
  /** The answer it must give. */
  expect: (status: number, body: any) => string | null
}

const validRows = (round: number) =>
  `code,long_url,title,tags\r\n${Array.from({ length: ROWS }, (_, i) => `r${round}-${i},https://example.com/bench/${round}/${i}?ref=import,Row ${i},bench\r\n`).join('')}`
/** 10 MiB (the largest file taken) of short junk lines: 2.6 million rows, over the row limit. */
const junkRows = () => 'long_url\n' + 'x,y\n'.repeat((10 * 1024 * 1024 - 9) / 4)
/** 10 MiB of junk in 50,000 rows (the most a file may hold) that pass the count and are each refused. */
const junkValid = () =>
  `long_url,title\r\n${Array.from({ length: ROWS }, (_, i) => `not a url ${i} ${'z'.repeat(186)},t\r\n`).join('')}`
/** 20 MiB of junk: over the body limit. */
const junk20 = () => 'long_url\n' + 'j'.repeat(20 * 1024 * 1024)

function form(text: string): FormData {
  const f = new FormData()
  f.set('file', new Blob([text], { type: 'text/csv' }), 'links.csv')
  f.set('format', 'csv')
  return f
}

const CASES: Case[] = [
  {
    id: 'import-50k',
    label: `${ROWS.toLocaleString('en-US')} valid rows`,
    body: (round) => form(validRows(round)),
    expect: (status, body) =>
      status === 200 && body?.return?.created === ROWS ? null : `answered ${status}, created ${body?.return?.created}`,
  },
  {
    id: 'import-junk-10m',
    label: '10 MiB of junk rows',
    body: () => form(junkRows()),
    expect: (status, body) =>
      status === 413 && body?.code === 'too_large' ? null : `answered ${status} ${body?.code}`,
  },
  {
    id: 'import-junk-50k',
    label: `${ROWS.toLocaleString('en-US')} rows of junk (10 MiB)`,
    body: () => form(junkValid()),
    expect: (status, body) =>
      status === 200 && body?.return?.skipped_total === ROWS
        ? null
        : `answered ${status}, skipped ${body?.return?.skipped_total}`,
  },
  {
    id: 'import-junk-20m',
    label: '20 MiB of junk (over the body limit)',
    body: () => form(junk20()),
    expect: (status, body) =>
      status === 413 && body?.code === 'too_large' ? null : `answered ${status} ${body?.code}`,
  },
]

async function importOnce(box: RunningServer, key: string, body: FormData) {
  const res = await fetch(`${box.url}/api/import.json`, { method: 'POST', headers: { 'x-api-key': key }, body })
  const text = await res.text()
  let parsed: any = null
  try {
    parsed = JSON.parse(text)
  } catch {}
  return { status: res.status, body: parsed }
}

export async function benchImport(ctx: BenchContext): Promise<string[]> {
  const lines: string[] = []
  const box = await serveCopy(ctx.binary, null)
  try {
    const key = await createAccount(box.configPath, 'bench', { command: [ctx.binary.path] })
    const hot = `${box.url}/${(await apiPost(box.url, 'getLink.json', { url: 'https://example.com/hot' }, { 'x-api-key': key })).body.return.hex}`
    // Warm: redirects alone for a second, and one small import.
    const alone = await redirectsDuring(hot, () => Bun.sleep(1000))
    await importOnce(box, key, form('long_url\r\nhttps://example.com/warm\r\n'))
    lines.push(
      `redirects alone: p99 ${p99(alone.ms).toFixed(2)} ms over ${alone.ms.length} (${CONCURRENCY} fetch loops)`,
    )
    for (const c of CASES) {
      const p99s: number[] = []
      const added: number[] = []
      const times: number[] = []
      for (let round = 1; round <= ctx.rounds; round++) {
        const body = c.body(round)
        Bun.gc(true)
        await Bun.sleep(200)
        const before = rssMiB(box.proc.pid)
        let seconds = 0
        let peak = 0
        const redirects = await redirectsDuring(hot, async () => {
          const started = performance.now()
          const answer = importOnce(box, key, body)
          const [got, rss] = await Promise.all([answer, peakRss(box.proc.pid, answer)])
          seconds = (performance.now() - started) / 1000
          peak = rss
          return got
        })
        const got = redirects.result
        const wrong = c.expect(got.status, got.body)
        if (wrong) lines.push(`ERROR: ${c.label}: ${wrong}`)
        if (redirects.errors) lines.push(`ERROR: ${c.label}: ${redirects.errors} redirects not answered 302`)
        p99s.push(p99(redirects.ms))
        added.push(Math.max(0, peak - before))
        times.push(seconds * 1000)
        lines.push(
          `round ${round}: ${c.label}: answered ${got.status} in ${seconds.toFixed(2)} s; redirects meanwhile p99 ${p99(redirects.ms).toFixed(2)} ms ` +
            `(max ${Math.max(...redirects.ms).toFixed(1)} ms, ${redirects.ms.length} redirects); RSS ${mib(before)} before, peak ${mib(peak)}`,
        )
      }
      ctx.figures.push(
        {
          id: `${c.id}-p99`,
          label: `Import of ${c.label}: redirect p99 meanwhile (worst round)`,
          value: Math.max(...p99s),
          rounds: p99s,
          unit: 'ms',
          target: { op: '<=', value: 50 },
        },
        {
          id: `${c.id}-rss`,
          label: `Import of ${c.label}: memory added (RSS, worst round)`,
          value: Math.max(...added),
          rounds: added,
          unit: 'MiB',
          target: { op: '<=', value: 100 },
        },
        {
          id: `${c.id}-time`,
          label: `Import of ${c.label}: time to the answer (median)`,
          value: median(times),
          rounds: times,
          unit: 'ms',
        },
      )
    }
  } finally {
    await box.stop()
  }
  return lines
}
