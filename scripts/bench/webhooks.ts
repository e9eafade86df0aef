// Webhooks (issue 10): what an endpoint costs the redirect path, and how fast the deliverer empties the outbox.
//   - Redirects of one link under wrk, alternately with NO webhook endpoint and with an endpoint of the
//     link's own account subscribed to link.clicked (made through webhooks.json before the round, deleted
//     after it). Same link, same account, same caches: the only difference is the subscription, and with it
//     whatever link.clicked costs (the events written with each click flush and their deliveries, which run
//     in the same process while wrk is going). The order inside a round swaps every round, and every round
//     ends only once the click buffer is written and the outbox is empty, so no round pays for the one
//     before. Issue 10's target: at least 0.9 of the unsubscribed rate. The receiver counts the link.clicked
//     deliveries it got: 0 means this binary writes no click events yet, and the two sides ran the same code.
//   - Deliveries/s to a local receiver, from another account whose endpoint subscribes to link.created:
//     burst: BURST creations through getLink.json at once (CREATE_CONCURRENCY in flight), timed from the
//       first creation to the last delivery received (the deliverer runs while the creations do);
//     drain: the same number of events already committed (the receiver holds its first answers until the
//       creations are done; the per-endpoint bound keeps the rest in the outbox), timed from the release to
//       the last delivery: the deliverer alone;
//     slow: a drain of SLOW_EVENTS with the receiver answering each after SLOW_MS. Two requests in flight per
//       endpoint bound one endpoint to 2 / SLOW_MS deliveries/s whatever the machine: the figure is set
//       beside that bound.
// The receiver is a Bun.serve in the bench process on 127.0.0.1, so the binary runs with
// media.allow_private_networks = true (webhooks share that switch); the guard still resolves and pins the
// address of every delivery.
//
//   bun scripts/bench/webhooks.ts      this section alone, on dist/linkbox (built when stale, as by bench.ts)
// LINKBOX_BENCH_WEBHOOKS_AA=1 makes no endpoint on either side (an A/A run): the spread of its ratios is the
// noise the redirect ratio has to be read against on this machine.
import { rmSync } from 'node:fs'
import {
  apiPost,
  CHROME_UA,
  createAccount,
  startServer,
  tempDir,
  writeConfig,
  type RunningServer,
} from '../../test/support/server'
import { benchBinary, removingOnStop } from './binary'
import type { BenchContext } from './context'
import { formatResult as fmt, median, peakRss, rssMiB, wrk, type WrkResult } from './wrk'

/** Link creations (each one link.created event) for the burst and the drain. */
export const BURST = 2000
/** Creations in flight at once from the bench process. */
const CREATE_CONCURRENCY = 32
/** Events of the slow drain: at the 40/s bound about 5 s. */
export const SLOW_EVENTS = 200
/** The slow receiver's wait before each answer. */
export const SLOW_MS = 50
/** The deliverer's requests in flight per endpoint (src/webhooks/deliverer.ts PER_ENDPOINT). */
export const PER_ENDPOINT = 2
/** An A/A run: the "subscribed" side makes no endpoint. */
const AA = process.env.LINKBOX_BENCH_WEBHOOKS_AA === '1'
/** How long a round may take to settle (click buffer written, outbox empty) before the bench gives up. */
const SETTLE_MS = 60_000
/** The receiver holds a delivery at most this long (the deliverer gives up on an answer after 15 s). */
const HOLD_CAP_MS = 10_000

export interface Receiver {
  url: string
  /** Requests received, their body bytes, and requests by the body's `type`. */
  readonly requests: number
  readonly bytes: number
  count(type: string): number
  /** Requests without a webhook-id, webhook-timestamp or webhook-signature header, or whose body is not an event. */
  readonly malformed: number
  /** Each answer waits this long first (0: at once). */
  delayMs: number
  /** From now on answers wait until release() (or HOLD_CAP_MS). */
  hold(): void
  release(): void
  /** Resolves with performance.now() of the moment `requests` reached `n`. */
  until(n: number, timeoutMs: number): Promise<number>
  stop(): void
}

/**
 * The local receiver: answers 200 (after `delayMs`, or once released when held), counting requests, bytes
 * and event types. Types are the few the service sends, and an unknown one is counted as "other": the map
 * stays bounded whatever arrives.
 */
export function startReceiver(): Receiver {
  let requests = 0
  let bytes = 0
  let malformed = 0
  const types = new Map<string, number>()
  const known = new Set([
    'link.created',
    'link.updated',
    'link.deleted',
    'link.clicked',
    'mail.received',
    'webhook.test',
  ])
  let gate: Promise<void> | null = null
  let open: (() => void) | null = null
  const waiters: { n: number; resolve: (t: number) => void }[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = await req.text()
      const at = performance.now()
      requests++
      bytes += body.length
      let type = 'other'
      try {
        const t = JSON.parse(body).type
        if (typeof t === 'string' && known.has(t)) type = t
      } catch {}
      if (
        type === 'other' ||
        !req.headers.get('webhook-id') ||
        !req.headers.get('webhook-timestamp') ||
        !req.headers.get('webhook-signature')
      )
        malformed++
      types.set(type, (types.get(type) ?? 0) + 1)
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (requests >= waiters[i]!.n) {
          waiters[i]!.resolve(at)
          waiters.splice(i, 1)
        }
      }
      if (gate) await gate
      if (r.delayMs > 0) await Bun.sleep(r.delayMs)
      return new Response(null, { status: 200 })
    },
  })
  const r: Receiver = {
    url: `http://127.0.0.1:${server.port}`,
    get requests() {
      return requests
    },
    get bytes() {
      return bytes
    },
    get malformed() {
      return malformed
    },
    count: (type) => types.get(type) ?? 0,
    delayMs: 0,
    hold() {
      if (gate) return
      gate = new Promise<void>((resolve) => {
        open = resolve
        setTimeout(resolve, HOLD_CAP_MS)
      })
    },
    release() {
      open?.()
      gate = null
      open = null
    },
    until(n, timeoutMs) {
      if (requests >= n) return Promise.resolve(performance.now())
      return new Promise((resolve, reject) => {
        const w = { n, resolve }
        waiters.push(w)
        setTimeout(() => {
          const i = waiters.indexOf(w)
          if (i < 0) return
          waiters.splice(i, 1)
          reject(new Error(`bench: the receiver got ${requests} requests, ${n} awaited, within ${timeoutMs} ms`))
        }, timeoutMs)
      })
    },
    stop() {
      r.release()
      server.stop(true)
    },
  }
  return r
}

/** One sample of /metrics: the value of an unlabelled metric. */
async function metric(box: RunningServer, name: string): Promise<number> {
  const text = await (await fetch(`${box.url}/metrics`)).text()
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'))
  if (!m) throw new Error(`bench: /metrics has no ${name}`)
  return Number(m[1])
}

/**
 * Waits until the clicks are written and no delivery waits (click buffer 0, outbox 0) and the receiver
 * has stopped getting requests for a moment: what a round left behind is done before the next starts.
 */
async function settle(box: RunningServer, receiver: Receiver): Promise<void> {
  const until = performance.now() + SETTLE_MS
  let last = -1
  for (;;) {
    const [buffer, outbox] = await Promise.all([
      metric(box, 'linkbox_click_buffer'),
      metric(box, 'linkbox_webhook_outbox'),
    ])
    const quiet = receiver.requests === last
    last = receiver.requests
    if (buffer === 0 && outbox === 0 && quiet) return
    if (performance.now() > until)
      throw new Error(`bench: not settled after ${SETTLE_MS} ms: click buffer ${buffer}, outbox ${outbox}`)
    await Bun.sleep(250)
  }
}

export async function createEndpoint(box: RunningServer, key: string, url: string, events: string): Promise<number> {
  const made = await apiPost(box.url, 'webhooks.json', { action: 'create', url, events }, { 'x-api-key': key })
  if (made.status !== 200)
    throw new Error(`bench: webhooks.json create answered ${made.status}: ${JSON.stringify(made.body)}`)
  return made.body.return.id as number
}

async function deleteEndpoint(box: RunningServer, key: string, id: number): Promise<void> {
  const gone = await apiPost(box.url, 'webhooks.json', { action: 'delete', id: String(id) }, { 'x-api-key': key })
  if (gone.status !== 200)
    throw new Error(`bench: webhooks.json delete answered ${gone.status}: ${JSON.stringify(gone.body)}`)
}

let created = 0
/** `n` links created through getLink.json, CREATE_CONCURRENCY at a time, each a distinct URL; every answer must be a 200. */
async function createLinks(box: RunningServer, key: string, n: number): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < n) {
      next++
      const url = `https://example.com/hook/${++created}?ref=bench`
      const res = await fetch(`${box.url}/api/getLink.json`, {
        method: 'POST',
        body: new URLSearchParams({ url }),
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': key },
      })
      const text = await res.text()
      if (res.status !== 200) throw new Error(`bench: getLink.json answered ${res.status}: ${text}`)
    }
  }
  await Promise.all(Array.from({ length: Math.min(CREATE_CONCURRENCY, n) }, worker))
}

/** `n` events committed while the receiver holds its answers, then released: deliveries/s of the deliverer alone. */
export async function drain(
  box: RunningServer,
  key: string,
  receiver: Receiver,
  n: number,
): Promise<{ rate: number; seconds: number }> {
  const base = receiver.requests
  receiver.hold()
  await createLinks(box, key, n)
  const released = performance.now()
  receiver.release()
  const done = await receiver.until(base + n, 120_000)
  const seconds = (done - released) / 1000
  return { rate: n / seconds, seconds }
}

const perSecond = (x: number) => `${Math.round(x).toLocaleString('en-US')}/s`

export async function benchWebhooks(opts: {
  rounds: number
  seconds: number
  /** The linkbox to run: the bench's binary, or `bun src/main.ts` when undefined. */
  command?: readonly string[]
  figures?: BenchContext['figures']
  commands?: string[]
}): Promise<string[]> {
  const lines: string[] = []
  const receiver = startReceiver()
  const config = writeConfig(tempDir('linkbox-bench-webhooks-'), { media: { allow_private_networks: true } })
  let box: RunningServer | undefined
  try {
    box = await startServer({ config, command: opts.command, startTimeoutMs: 60_000 }).catch((err) => {
      rmSync(config.dir, { recursive: true, force: true })
      throw err
    })
    // The data directory goes with the server.
    box = removingOnStop(box, config.dir)

    // Part 1: redirects with and without a link.clicked endpoint, on one link of one account.
    const key = await createAccount(box.configPath, 'bench', { command: opts.command })
    const link = await apiPost(box.url, 'getLink.json', { url: 'https://example.com/bench' }, { 'x-api-key': key })
    const code = link.body.return.hex as string
    const headers = { 'user-agent': CHROME_UA }
    const redirect = (seconds: number) => wrk(`${box!.url}/${code}`, { seconds, headers })
    await redirect(1)
    await settle(box, receiver)
    const idle = rssMiB(box.proc.pid)
    let peak = 0
    const ratios: number[] = []
    const plain: number[] = []
    let clickDeliveries = 0
    let clickBytes = 0
    let errors = 0
    let wrkCommand = ''
    for (let i = 0; i < opts.rounds; i++) {
      const side = async (subscribed: boolean): Promise<WrkResult> => {
        const id = subscribed && !AA ? await createEndpoint(box!, key, `${receiver.url}/clicks`, 'link.clicked') : 0
        const before = { n: receiver.count('link.clicked'), bytes: receiver.bytes }
        const run = redirect(opts.seconds)
        const [r, rss] = await Promise.all([run, peakRss(box!.proc.pid, run)])
        peak = Math.max(peak, rss)
        errors += r.errors
        wrkCommand = r.command
        // The round's clicks are written and their events delivered before the endpoint goes.
        await settle(box!, receiver)
        if (subscribed && !AA) {
          clickDeliveries += receiver.count('link.clicked') - before.n
          clickBytes += receiver.bytes - before.bytes
          await deleteEndpoint(box!, key, id)
        }
        return r
      }
      // Swapped every round: neither side always runs first.
      const subscribedFirst = i % 2 === 1
      const first = await side(subscribedFirst)
      const second = await side(!subscribedFirst)
      const [none, sub] = subscribedFirst ? [second, first] : [first, second]
      ratios.push(sub.rps / none.rps)
      plain.push(none.rps)
      lines.push(`round ${i + 1}: no endpoint              ${fmt(none)}${subscribedFirst ? '' : '  (first)'}`)
      lines.push(
        `round ${i + 1}: link.clicked endpoint    ${fmt(sub)}  (ratio ${(sub.rps / none.rps).toFixed(2)})${subscribedFirst ? '  (first)' : ''}`,
      )
    }
    const ratio = median(ratios)
    if (AA)
      lines.push('A/A RUN (LINKBOX_BENCH_WEBHOOKS_AA=1): no endpoint was made on either side; the ratios are noise')
    const stats = await apiPost(box.url, 'stats.json', { code }, { 'x-api-key': key })
    lines.push(
      `redirects with a link.clicked endpoint / with none: median ratio ${ratio.toFixed(2)} over ${opts.rounds} rounds of ${opts.seconds} s ` +
        `(wrk -t2 -c64, one link, the endpoint made before and deleted after each subscribed round); target ≥ 0.90: ${ratio >= 0.9 ? 'met' : 'MISSED'}`,
    )
    lines.push(
      clickDeliveries === 0
        ? 'link.clicked deliveries received during the subscribed rounds: 0: this binary writes no click events yet, so both sides ran the same redirect code (the ratio is the noise of the measurement)'
        : `link.clicked deliveries received during the subscribed rounds: ${clickDeliveries.toLocaleString('en-US')} (${(clickBytes / 1024).toFixed(0)} KiB), all sent before the next round began`,
    )
    lines.push(
      `clicks recorded: ${stats.body.return.clicks.toLocaleString('en-US')}; linkbox RSS ${idle.toFixed(0)} MiB idle, peak ${peak.toFixed(0)} MiB under load`,
    )
    if (errors) lines.push(`ERRORS: ${errors} redirects were not answered 3xx`)

    // Part 2: deliveries/s, from another account whose endpoint subscribes to link.created.
    const hooksKey = await createAccount(box.configPath, 'hooks', { command: opts.command })
    await createEndpoint(box, hooksKey, `${receiver.url}/created`, 'link.created')
    // Warm the creation path and the deliverer.
    {
      const base = receiver.requests
      await createLinks(box, hooksKey, 100)
      await receiver.until(base + 100, 60_000)
    }
    const bursts: { create: number; endToEnd: number; lag: number }[] = []
    const drains: number[] = []
    const slows: number[] = []
    for (let i = 0; i < opts.rounds; i++) {
      const base = receiver.requests
      const started = performance.now()
      await createLinks(box, hooksKey, BURST)
      const createdAt = performance.now()
      const done = await receiver.until(base + BURST, 120_000)
      const b = {
        create: BURST / ((createdAt - started) / 1000),
        endToEnd: BURST / ((done - started) / 1000),
        lag: Math.max(0, done - createdAt),
      }
      bursts.push(b)
      lines.push(
        `round ${i + 1}: burst: ${BURST} creations at ${perSecond(b.create)}, all ${BURST} delivered ${(b.lag / 1000).toFixed(2)} s after the last creation: ` +
          `${perSecond(b.endToEnd)} first creation → last delivery`,
      )
      await settle(box, receiver)
      const d = await drain(box, hooksKey, receiver, BURST)
      drains.push(d.rate)
      lines.push(
        `round ${i + 1}: drain: ${BURST} committed events delivered in ${d.seconds.toFixed(2)} s: ${perSecond(d.rate)}`,
      )
      await settle(box, receiver)
      receiver.delayMs = SLOW_MS
      try {
        const s = await drain(box, hooksKey, receiver, SLOW_EVENTS)
        slows.push(s.rate)
        lines.push(
          `round ${i + 1}: slow: ${SLOW_EVENTS} events, receiver answering after ${SLOW_MS} ms, delivered in ${s.seconds.toFixed(2)} s: ${s.rate.toFixed(1)}/s`,
        )
        await settle(box, receiver)
      } finally {
        receiver.delayMs = 0
      }
    }
    const bound = (PER_ENDPOINT * 1000) / SLOW_MS
    const drainRate = median(drains)
    const slowRate = median(slows)
    const burstRate = median(bursts.map((b) => b.endToEnd))
    lines.push(
      `deliveries/s to one endpoint (receiver answering at once): ${perSecond(drainRate)} draining a backlog (median of ${opts.rounds}); ` +
        `${perSecond(burstRate)} from the first of ${BURST} creations to the last delivery, creations at ${perSecond(median(bursts.map((b) => b.create)))} ` +
        `(${CREATE_CONCURRENCY} in flight, the receiver in the bench process: all share the CPUs)`,
    )
    lines.push(
      `with the receiver answering after ${SLOW_MS} ms: ${slowRate.toFixed(1)} deliveries/s against the bound of ${PER_ENDPOINT} in flight per endpoint, ` +
        `${PER_ENDPOINT} / ${SLOW_MS} ms = ${bound.toFixed(0)}/s (${((slowRate / bound) * 100).toFixed(0)} % of it): one endpoint's backlog ` +
        `empties no faster than its receiver answers two at a time (a receiver at 1 s per answer gets 2/s, 7,200 an hour); other endpoints are not held back by it`,
    )
    if (receiver.malformed)
      lines.push(`MALFORMED: ${receiver.malformed} requests lacked a webhook header or an event body`)
    lines.push(
      'the receiver runs in the bench process on 127.0.0.1, so linkbox runs with media.allow_private_networks = true; the guard still resolves and pins the address of each delivery',
    )

    opts.figures?.push(
      {
        id: 'webhook-redirect-ratio',
        label: 'Redirects with a link.clicked endpoint ÷ with none',
        value: ratio,
        unit: '×',
        target: { op: '>=', value: 0.9 },
        baseline: `no endpoint: ${Math.round(median(plain)).toLocaleString('en-US')} req/s; link.clicked deliveries in the subscribed rounds: ${clickDeliveries}`,
      },
      {
        id: 'webhook-drain',
        label: 'Webhook deliveries/s, one endpoint, backlog drained',
        value: drainRate,
        unit: '/s',
      },
      {
        id: 'webhook-burst',
        label: `Webhook deliveries/s, ${BURST} creations → last delivery`,
        value: burstRate,
        unit: '/s',
      },
      {
        id: 'webhook-slow',
        label: `Webhook deliveries/s, one endpoint answering after ${SLOW_MS} ms`,
        value: slowRate,
        unit: '/s',
        baseline: `bound: ${PER_ENDPOINT} in flight per endpoint = ${bound.toFixed(0)}/s`,
      },
      { id: 'rss-peak-webhooks', label: 'RSS peak, redirects with a link.clicked endpoint', value: peak, unit: 'MiB' },
    )
    opts.commands?.push(
      wrkCommand,
      `# webhooks: the same wrk on one link alternately with no endpoint and with a link.clicked endpoint (POST /api/webhooks.json action=create events=link.clicked, ` +
        `action=delete after the round); ${BURST} × POST /api/getLink.json (${CREATE_CONCURRENCY} at once, fetch) for an account whose endpoint subscribes to link.created, ` +
        `timed to the last request at a Bun.serve receiver in the bench process; alone: bun scripts/bench/webhooks.ts`,
    )
  } finally {
    await box?.stop()
    receiver.stop()
  }
  return lines
}

if (import.meta.main) {
  const rounds = Number(process.env.LINKBOX_BENCH_ROUNDS ?? 3)
  const seconds = Number(process.env.LINKBOX_BENCH_SECONDS ?? 4)
  const binary = await benchBinary()
  console.log((await benchWebhooks({ rounds, seconds, command: [binary.path] })).join('\n'))
}
