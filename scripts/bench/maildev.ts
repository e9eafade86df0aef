// The mail bench's anchor (issue 39): maildev (npm, MIT), a development mail catcher that parses each message
// with mailparser, writes it to a file and keeps it in memory, as an outside check ran it. It is pinned in a
// package of its own, bench/maildev (package.json and package-lock.json), installed on demand with `npm ci`:
// the root package.json stays without it, since CI installs that and maildev brings express and jsdom.
import { existsSync, rmSync } from 'node:fs'
import { basename, join } from 'node:path'
import { freePort, tempDir } from '../../test/support/server'
import { ROOT } from './binary'
import type { SmtpChild } from './mail'

export const MAILDEV_DIR = join(ROOT, 'bench/maildev')
const CLI = join(MAILDEV_DIR, 'node_modules/maildev/bin/maildev')

/** The pinned version, from bench/maildev/package.json. */
export const maildevVersion = async (): Promise<string> =>
  (await Bun.file(join(MAILDEV_DIR, 'package.json')).json()).dependencies.maildev

/** Installs bench/maildev's lock file when its node_modules is missing; throws with npm's words when it fails. */
export function ensureMaildev(): void {
  if (existsSync(CLI)) return
  const npm = Bun.which('npm')
  if (!npm) throw new Error('npm is not installed')
  const r = Bun.spawnSync([npm, 'ci', '--prefix', MAILDEV_DIR, '--no-audit', '--no-fund'], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (r.exitCode !== 0 || !existsSync(CLI))
    throw new Error(
      `npm ci --prefix bench/maildev failed: ${r.stderr.toString().trim().split('\n').slice(-3).join(' ')}`,
    )
}

/** maildev's runtime: Node, as it is made for (Bun when there is no Node). */
export const maildevRuntime = () => Bun.which('node') ?? process.execPath

/**
 * maildev with its SMTP on a free port of 127.0.0.1 (it takes no port 0: one is bound and freed first), the web
 * interface off, its messages in a temporary folder removed on stop.
 */
export async function startMaildev(): Promise<SmtpChild & { command: string }> {
  ensureMaildev()
  const port = await freePort()
  const dir = tempDir('linkbox-bench-maildev-')
  const args = [maildevRuntime(), CLI, '--smtp', String(port), '--ip', '127.0.0.1', '--disable-web']
  const proc = Bun.spawn([...args, '--mail-directory', dir], { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
  let out = ''
  for (const stream of [proc.stdout, proc.stderr])
    void (async () => {
      const decoder = new TextDecoder()
      const reader = stream.getReader()
      for (let r = await reader.read(); !r.done; r = await reader.read())
        out += decoder.decode(r.value, { stream: true })
    })()
  const stop = async () => {
    proc.kill('SIGTERM')
    const t = setTimeout(() => proc.kill('SIGKILL'), 5_000)
    await proc.exited
    clearTimeout(t)
    rmSync(dir, { recursive: true, force: true })
  }
  const until = performance.now() + 20_000
  while (!/SMTP Server running at/.test(out)) {
    if (proc.exitCode !== null || performance.now() > until) {
      await stop()
      throw new Error(`maildev did not start: ${out.trim() || `exit ${proc.exitCode}`}`)
    }
    await Bun.sleep(20)
  }
  const command = `${[basename(args[0]!), ...args.slice(1)].map((a) => a.replace(ROOT, '.')).join(' ')} --mail-directory $TMPDIR/…`
  return { port, pid: proc.pid, stop, command }
}
