// Start-up safety (issue 12): files that hold secrets are the owner's alone whatever the umask, serve
// refuses a data directory anyone may write to (and doctor says why), and doctor's checks of the clock, the
// mail domains' MX records and the free disk give the verdicts the issue names.
import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { chmodSync, existsSync, readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import nodemailer from 'nodemailer'
import { buildConfig } from '../../src/kernel/config'
import { checkClock, checkDisk } from '../../src/app/doctor-storage'
import { checkMx } from '../../src/app/doctor-services'
import {
  SOURCE_COMMAND,
  apiPost,
  createAccount,
  freePort,
  killAllServers,
  removeDir,
  runCli,
  startServer,
  tempDir,
  writeConfig,
  type TestConfig,
} from '../support/server'

setDefaultTimeout(60_000)

const dirs: string[] = []
afterAll(async () => {
  await killAllServers()
  dirs.forEach(removeDir)
})

function config(overrides = {}): TestConfig {
  const c = writeConfig(tempDir('linkbox-safety-'), overrides)
  dirs.push(c.dir)
  return c
}

/** Every file and folder under dir with its permission bits. */
function modes(dir: string): Record<string, number> {
  const out: Record<string, number> = {}
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name)
      out[relative(dir, path)] = statSync(path).mode & 0o777
      if (e.isDirectory()) walk(path)
    }
  }
  walk(dir)
  return out
}

describe('secret files', () => {
  test('with umask 000: the data dir, database, signing secret, mail store and lock are the owner’s only', async () => {
    const c = config({ mail: { smtp_host: '127.0.0.1', smtp_port: await freePort(), domains: ['safety.test'] } })
    const umask0 = ['sh', '-c', 'umask 000; exec "$0" "$@"', ...SOURCE_COMMAND]
    const key = await createAccount(c.configPath, 'sam', { command: umask0 })
    const server = await startServer({ config: c, command: umask0 })
    try {
      // The SMTP line follows "listening on".
      let smtpLine: RegExpMatchArray | null = null
      for (let i = 0; i < 300 && !(smtpLine = server.stdout().match(/SMTP on \S+:(\d+)/)); i++) await Bun.sleep(20)
      const smtpPort = Number(smtpLine![1])
      const address = (
        (await (
          await fetch(`${server.url}/api/mailbox.json?address=box`, { headers: { 'x-api-key': key } })
        ).json()) as any
      ).return.address
      const smtp = nodemailer.createTransport({
        host: '127.0.0.1',
        port: smtpPort,
        secure: false,
        ignoreTLS: true,
      } as any)
      // Large enough to be kept in files under mail/ (small ones live in the database).
      await smtp.sendMail({
        from: 'a@example.org',
        to: address,
        subject: 'x',
        text: 'y',
        attachments: [{ filename: 'a.bin', content: Buffer.alloc(300 * 1024, 7) }],
      })
      smtp.close()
      expect(
        (await apiPost(server.url, 'getLink.json', { url: 'https://example.org/' }, { 'x-api-key': key })).status,
      ).toBe(200)
      const seen = modes(c.dataDir)
      expect(seen['secrets/signing.key']).toBe(0o600)
      expect(seen['linkbox.lock']).toBe(0o600)
      expect(statSync(c.dataDir).mode & 0o777).toBe(0o700)
      const secretish = Object.entries(seen).filter(
        ([p]) => p === 'secrets' || p.startsWith('secrets/') || p.startsWith('mail') || p.startsWith('linkbox.db'),
      )
      expect(secretish.some(([p]) => p.endsWith('raw.eml'))).toBe(true)
      expect(secretish.some(([p]) => p === 'linkbox.db-wal')).toBe(true)
      for (const [path, mode] of secretish) expect([path, mode & 0o077]).toEqual([path, 0])
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })
})

describe('a world-writable data_dir', () => {
  test('serve refuses it with one line saying why and how to fix it; doctor FAILs it the same way', async () => {
    const c = config()
    await createAccount(c.configPath, 'wendy')
    chmodSync(c.dataDir, 0o777)
    const line = `linkbox: data_dir ${c.dataDir} is world-writable (mode 777): any local user could replace the database or the signing secret; fix it with: chmod 700 ${c.dataDir}\n`
    const r = await runCli(['serve', '--config', c.configPath])
    expect(r.stderr).toBe(line)
    expect(r.code).toBe(1)
    expect(existsSync(join(c.dataDir, 'linkbox.lock'))).toBe(false)
    const doctor = await runCli(['doctor', '--config', c.configPath])
    expect(doctor.code).toBe(1)
    expect(doctor.stdout).toContain(`FAIL  data_dir         ${c.dataDir} is world-writable (mode 777)`)
    expect(doctor.stdout).toContain(`chmod 700 ${c.dataDir}`)
    chmodSync(c.dataDir, 0o750) // group-readable is the owner's choice: not refused
    const server = await startServer({ config: c })
    // A request first: serve prints "listening on" a moment before its SIGTERM handler is in place.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    expect(await server.stop()).toBe(0)
  })
})

describe('doctor: clock, MX, free disk', () => {
  test('free disk: ok from 1 GiB, warn below, FAIL under 100 MiB', () => {
    expect(checkDisk('/data', 5 * 2 ** 30).verdict).toBe('ok')
    expect(checkDisk('/data', 2 ** 30).verdict).toBe('ok')
    expect(checkDisk('/data', 2 ** 30 - 1)).toEqual({
      verdict: 'warn',
      what: 'free disk',
      detail: 'only 1024.0 MiB free for /data: under 1 GiB, mail and the media cache can fill it',
    })
    expect(checkDisk('/data', 100 * 2 ** 20).verdict).toBe('warn')
    expect(checkDisk('/data', 100 * 2 ** 20 - 1).verdict).toBe('FAIL')
    expect(checkDisk('/data', null).verdict).toBe('warn')
  })

  test('clock: a warning when it is before the build or the newest row', () => {
    const t = Date.parse('2026-06-01T00:00:00Z')
    expect(checkClock(t, t - 1000, t - 1000).verdict).toBe('ok')
    expect(checkClock(t, null, null).verdict).toBe('ok')
    expect(checkClock(t, t + 1000, null)).toMatchObject({
      verdict: 'warn',
      detail: expect.stringContaining('before this linkbox was built'),
    })
    expect(checkClock(t, null, t + 86_400_000)).toMatchObject({
      verdict: 'warn',
      detail: expect.stringContaining('before the newest row in the database (2026-06-02T00:00:00Z)'),
    })
  })

  test('MX: a hint, never a FAIL; no answer in time is a warning too', async () => {
    const cfg = buildConfig({ mail: { domains: ['a.test', 'b.test', 'c.test', 'd.test'], smtp_port: 2525 } })
    const findings = await checkMx(
      cfg,
      async (d) => {
        if (d === 'a.test')
          return [
            { exchange: 'mx2.a.test', priority: 20 },
            { exchange: 'mx1.a.test', priority: 10 },
          ]
        if (d === 'b.test') return []
        if (d === 'c.test') throw Object.assign(new Error('queryMx ENOTFOUND c.test'), { code: 'ENOTFOUND' })
        return new Promise(() => {}) // never answers
      },
      50,
    )
    expect(findings.map((f) => f.verdict)).toEqual(['ok', 'warn', 'warn', 'warn'])
    expect(findings[0]!.detail).toBe('a.test → mx1.a.test, mx2.a.test (should reach port 2525 here, or a relay to it)')
    expect(findings[2]!.detail).toContain('(ENOTFOUND)')
    expect(findings[3]!.detail).toContain('no answer within 0.05 s')
    expect(await checkMx(buildConfig({ mail: { smtp_port: 0 } }))).toEqual([
      { verdict: 'ok', what: 'mail MX', detail: 'mail.smtp_port is 0: no mail is received' },
    ])
  })

  test('a real doctor run lists the three checks, and offline or not, MX is never a FAIL', async () => {
    const c = config({ mail: { smtp_port: await freePort(), domains: ['localhost'] } })
    const r = await runCli(['doctor', '--config', c.configPath])
    expect(r.stdout).toMatch(/^(ok|warn)\s+mail MX\s+localhost/m)
    expect(r.stdout).toMatch(/^(ok|warn)\s+free disk\s/m)
    expect(r.stdout).toMatch(/^ok\s+clock\s+\d{4}-/m)
  })
})
