// Mail (issues 8 and 39): small messages per second ingested end to end by `linkbox serve` (the 250 arrives
// only once the message is parsed, its files fsynced and its rows committed), against maildev (maildev.ts: a
// development mail catcher that parses each message, writes it to a file unsynced and keeps it in memory), as
// an outside check compared them. Both are child processes, driven by the same raw SMTP client (smtp-load.ts),
// measured alternately in the same run. Issue 39's target: at least 1.0 of maildev; the p99 from the end of
// DATA to the 250 beside it. When maildev cannot be installed or started, the anchor is issue 8's: a bare
// smtp-server of linkbox's package and version that reads each message to its end (bare-smtp.ts), target 0.5.
//
//   bun scripts/bench/mail.ts          this section alone, linkbox from source (`bun src/main.ts serve`)
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { createAccount, freePort, tempDir, writeConfig, type RunningServer } from '../../test/support/server'
import { removingOnStop, startBenchServer } from './binary'
import type { BenchContext } from './context'
import { maildevRuntime, maildevVersion, startMaildev } from './maildev'
import { smtpLoad, type LoadResult } from './smtp-load'
import { median, peakRss, rssMiB } from './wrk'

/** Connections at once, each with one message at a time: a busy inbound relay's worth. */
export const MAIL_CONNECTIONS = 16
/** Mailboxes the messages are spread over (connection i → mailbox i mod this). */
const MAILBOXES = 8
/** mail.max_messages for the run: far above what a run sends, so that no mailbox fills. */
const MAX_MESSAGES = 100_000
const DOMAIN = 'bench.test'

export interface SmtpChild {
  port: number
  pid: number
  stop(): Promise<void>
}

/** Resolves with the first match of `pattern` in what `text()` returns, polled; rejects after `ms`. */
async function waitFor(
  text: () => string,
  pattern: RegExp,
  ms: number,
  what: string,
  exited: () => boolean,
): Promise<RegExpMatchArray> {
  const until = performance.now() + ms
  for (;;) {
    const m = text().match(pattern)
    if (m) return m
    if (exited()) throw new Error(`bench: ${what} exited before saying ${pattern}: ${text()}`)
    if (performance.now() > until) throw new Error(`bench: ${what} did not say ${pattern} within ${ms} ms: ${text()}`)
    await Bun.sleep(10)
  }
}

/** The bare smtp-server (bare-smtp.ts) in a process of its own. */
export async function startBareSmtp(): Promise<SmtpChild> {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, 'bare-smtp.ts')], {
    stdout: 'pipe',
    stderr: 'inherit',
    stdin: 'ignore',
  })
  let out = ''
  void (async () => {
    const decoder = new TextDecoder()
    const reader = proc.stdout.getReader()
    for (let r = await reader.read(); !r.done; r = await reader.read()) out += decoder.decode(r.value, { stream: true })
  })()
  try {
    const m = await waitFor(
      () => out,
      /bare SMTP on 127\.0\.0\.1:(\d+)/,
      15_000,
      'bare-smtp.ts',
      () => proc.exitCode !== null,
    )
    return {
      port: Number(m[1]),
      pid: proc.pid,
      async stop() {
        proc.kill('SIGTERM')
        const t = setTimeout(() => proc.kill('SIGKILL'), 5_000)
        await proc.exited
        clearTimeout(t)
      },
    }
  } catch (err) {
    proc.kill('SIGKILL')
    throw err
  }
}

export interface MailBox {
  server: RunningServer
  smtpPort: number
  key: string
  /** The live mailboxes the load is spread over. */
  recipients: string[]
  /** Messages stored in them, as mailbox.json counts them. */
  stored(): Promise<number>
}

/** GET an /api method (the mail methods take GET only). */
async function apiGet(
  base: string,
  method: string,
  query: Record<string, string>,
  key: string,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/api/${method}?${new URLSearchParams(query)}`, { headers: { 'x-api-key': key } })
  return { status: res.status, body: await res.json() }
}

/** `linkbox serve` (the given command) with SMTP on a free port, an account and MAILBOXES mailboxes made through the API. */
export async function startMailBox(command: readonly string[] | undefined): Promise<MailBox> {
  const smtpPort = await freePort()
  const config = writeConfig(tempDir('linkbox-bench-mail-'), {
    mail: {
      domains: [DOMAIN],
      smtp_host: '127.0.0.1',
      smtp_port: smtpPort,
      max_messages: MAX_MESSAGES,
      max_connections_per_ip: 1000,
    },
  })
  const server = await startBenchServer({ config, command, startTimeoutMs: 60_000 })
  try {
    await waitFor(
      server.stdout,
      /linkbox: SMTP on [^\s:]+:(\d+)/,
      15_000,
      'linkbox serve',
      () => server.proc.exitCode !== null,
    )
    const key = await createAccount(server.configPath, 'bench', { command })
    const recipients: string[] = []
    for (let i = 0; i < MAILBOXES; i++) {
      const made = await apiGet(server.url, 'mailbox.json', { address: `bench${i}@${DOMAIN}` }, key)
      if (made.status !== 200)
        throw new Error(`bench: mailbox.json answered ${made.status}: ${JSON.stringify(made.body)}`)
      recipients.push(made.body.return.address)
    }
    const stored = async () => {
      let n = 0
      for (const address of recipients)
        n += (await apiGet(server.url, 'mailbox.json', { address }, key)).body.return.messages as number
      return n
    }
    return {
      // The data directory goes with the server.
      server: removingOnStop(server, config.dir),
      smtpPort,
      key,
      recipients,
      stored,
    }
  } catch (err) {
    await server.kill()
    rmSync(config.dir, { recursive: true, force: true })
    throw err
  }
}

const fmt = (r: LoadResult) =>
  `${Math.round(r.rate).toString().padStart(6)} msgs/s  end of DATA → 250: p50 ${r.p50ms.toFixed(2)} ms  p99 ${r.p99ms.toFixed(2)} ms` +
  `  (${r.accepted.toLocaleString('en-US')} in ${r.seconds.toFixed(1)} s)${r.errors ? `  ERRORS ${r.errors}: ${r.firstError}` : ''}`

/** The anchor the mail figure is divided by: maildev, or the bare smtp-server when maildev cannot run. */
interface Anchor extends SmtpChild {
  name: string
  maildev: boolean
  command: string
}

async function startAnchor(lines: string[]): Promise<Anchor> {
  try {
    const m = await startMaildev()
    const runtime = maildevRuntime() === process.execPath ? `Bun ${Bun.version}` : `Node ${await nodeVersion()}`
    return { ...m, name: `maildev ${await maildevVersion()} (${runtime})`, maildev: true }
  } catch (err) {
    lines.push(`maildev could not run (${(err as Error).message}): the anchor is the bare smtp-server, as before`)
    const b = await startBareSmtp()
    return { ...b, name: 'bare smtp-server', maildev: false, command: 'bun scripts/bench/bare-smtp.ts' }
  }
}

const nodeVersion = async () =>
  (await new Response(Bun.spawn(['node', '--version'], { stdout: 'pipe' }).stdout).text()).trim().replace(/^v/, '')

export async function benchMail(opts: {
  rounds: number
  seconds: number
  /** The linkbox to run: the bench's binary, or `bun src/main.ts` when undefined. */
  command?: readonly string[]
  figures?: BenchContext['figures']
  commands?: string[]
}): Promise<string[]> {
  const lines: string[] = []
  const anchor = await startAnchor(lines)
  const target = anchor.maildev ? 1 : 0.5
  let box: MailBox | undefined
  try {
    box = await startMailBox(opts.command)
    const { recipients, smtpPort } = box
    const load = (port: number, seconds: number) =>
      smtpLoad({ port, connections: MAIL_CONNECTIONS, seconds, recipients })
    // Warm both (JIT, mailparser's first use, the statement cache).
    await load(anchor.port, 1)
    let acknowledged = (await load(smtpPort, 1)).accepted
    const idle = rssMiB(box.server.proc.pid)
    const ratios: number[] = []
    const anchors: LoadResult[] = []
    const boxes: LoadResult[] = []
    let peak = 0
    let errors = 0
    const label = anchor.name.split(' (')[0]!.padEnd(19)
    for (let i = 0; i < opts.rounds; i++) {
      // The anchor first in even rounds, linkbox first in odd ones.
      const linkbox = () => {
        const run = load(smtpPort, opts.seconds)
        return Promise.all([run, peakRss(box!.server.proc.pid, run)])
      }
      const first = i % 2 === 0 ? await load(anchor.port, opts.seconds) : null
      const [l, rss] = await linkbox()
      const a = first ?? (await load(anchor.port, opts.seconds))
      peak = Math.max(peak, rss)
      acknowledged += l.accepted
      errors += a.errors + l.errors
      anchors.push(a)
      boxes.push(l)
      ratios.push(l.rate / a.rate)
      lines.push(`round ${i + 1}: ${label} ${fmt(a)}`)
      lines.push(`round ${i + 1}: ${'linkbox serve'.padEnd(19)} ${fmt(l)}  (ratio ${(l.rate / a.rate).toFixed(2)})`)
    }
    const stored = await box.stored()
    const ratio = median(ratios)
    const anchorRate = median(anchors.map((r) => r.rate))
    const anchorP99 = median(anchors.map((r) => r.p99ms))
    const boxP99 = median(boxes.map((r) => r.p99ms))
    lines.push(
      `mail ingested end to end / ${anchor.name}: median ratio ${ratio.toFixed(2)} over ${opts.rounds} rounds of ${opts.seconds} s ` +
        `(${MAIL_CONNECTIONS} connections, ~1 KB messages over ${recipients.length} mailboxes); target ≥ ${target.toFixed(2)}: ${ratio >= target ? 'met' : 'MISSED'}`,
    )
    lines.push(
      `end of DATA → 250, p99 (median of the rounds): linkbox ${boxP99.toFixed(2)} ms, ${anchor.name} ${anchorP99.toFixed(2)} ms`,
    )
    lines.push(
      `linkbox: ${stored.toLocaleString('en-US')} messages stored, ${acknowledged.toLocaleString('en-US')} acknowledged with 250; RSS ${idle.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB`,
    )
    if (stored !== acknowledged)
      lines.push(`MISMATCH: ${acknowledged - stored} messages were acknowledged but are not in their mailboxes`)
    if (errors) lines.push(`ERRORS: ${errors} messages were refused or lost (see the rounds)`)
    const anchorWords = anchor.maildev
      ? `${anchor.name}, which writes each message unsynced and keeps it in memory`
      : 'bare smtp-server (maildev could not run)'
    opts.figures?.push(
      {
        id: anchor.maildev ? 'mail-maildev-ratio' : 'mail-ratio',
        label: `Mail ingested end to end (250 received, durable) ÷ ${anchor.maildev ? 'maildev' : 'bare smtp-server'}`,
        value: ratio,
        rounds: ratios,
        unit: '×',
        target: { op: '>=', value: target },
        baseline: `${anchorWords}: ${Math.round(anchorRate).toLocaleString('en-US')} msgs/s, p99 ${anchorP99.toFixed(2)} ms`,
      },
      {
        id: 'mail-p99',
        label: 'Mail: end of DATA → 250, p99',
        value: boxP99,
        unit: 'ms',
        baseline: `${anchor.name}: p99 ${anchorP99.toFixed(2)} ms`,
      },
    )
    opts.commands?.push(
      `# mail: smtpLoad() of scripts/bench/smtp-load.ts in the bench process, ${MAIL_CONNECTIONS} connections × ${opts.seconds} s, ` +
        `MAIL+RCPT+DATA pipelined, ~1 KB messages, against linkbox serve (mail.max_messages ${MAX_MESSAGES}) and: ${anchor.command}; alone: bun scripts/bench/mail.ts`,
    )
  } finally {
    await box?.server.stop()
    await anchor.stop()
  }
  return lines
}

if (import.meta.main) {
  const rounds = Number(process.env.LINKBOX_BENCH_ROUNDS ?? 3)
  const seconds = Number(process.env.LINKBOX_BENCH_SECONDS ?? 4)
  console.log((await benchMail({ rounds, seconds })).join('\n'))
}
