// `linkbox doctor`: checks what the service needs before (or while) it runs, and says what to fix.
// A FAIL stops the service from working; a warn is worth knowing (a feature that will not work, a
// setting that is probably not what was meant); a skip is a check that could not run because one it
// depends on failed (no config: no data directory to look at).
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { createServer } from 'node:net'
import { join } from 'node:path'
import type { Config } from './config'
import { DatabaseError, openDatabase, probeWrite, type Db } from './db'
import { migrations } from './db/migrations'
import { createYtdlp, embeddedYtdlp } from './media/ytdlp'

export type Verdict = 'ok' | 'warn' | 'FAIL' | 'skip'
export interface Finding {
  verdict: Verdict
  what: string
  detail: string
}

function checkDataDir(dir: string): Finding {
  try {
    if (existsSync(dir) && !statSync(dir).isDirectory()) return { verdict: 'FAIL', what: 'data_dir', detail: `${dir} is not a directory` }
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    accessSync(dir, constants.W_OK)
    const probe = join(dir, `.doctor-${process.pid}`)
    writeFileSync(probe, 'ok')
    rmSync(probe)
    return { verdict: 'ok', what: 'data_dir', detail: `${dir} is writable` }
  } catch (err) {
    return { verdict: 'FAIL', what: 'data_dir', detail: `${dir}: ${(err as Error).message}` }
  }
}

function checkDatabase(dir: string): Finding[] {
  const path = join(dir, 'linkbox.db')
  const fresh = !existsSync(path)
  let db: Db
  try {
    db = openDatabase(path) // creates it, or brings its schema up to date
  } catch (err) {
    const detail = err instanceof DatabaseError ? err.message : `${path}: ${(err as Error).message}`
    return [
      { verdict: 'FAIL', what: 'database', detail },
      { verdict: 'skip', what: 'database write', detail: 'the database does not open' },
    ]
  }
  try {
    const check = (db.query('PRAGMA quick_check').get() as { quick_check: string }).quick_check
    const version = (db.query('PRAGMA user_version').get() as { user_version: number }).user_version
    const opened: Finding =
      check === 'ok'
        ? { verdict: 'ok', what: 'database', detail: `${path} ${fresh ? 'created' : 'opens'}, schema ${version}/${migrations.length}, quick_check ok` }
        : { verdict: 'FAIL', what: 'database', detail: `${path}: quick_check says ${check}` }
    return [opened, checkWritable(db, dir)]
  } catch (err) {
    return [{ verdict: 'FAIL', what: 'database', detail: `${path}: ${(err as Error).message}` }]
  } finally {
    db.close()
  }
}

const LOW_SPACE = 64 * 1024 * 1024

/** A write in a transaction that is rolled back, and the free space left for the ones that are kept. */
function checkWritable(db: Db, dir: string): Finding {
  const problem = probeWrite(db)
  if (problem) return { verdict: 'FAIL', what: 'database write', detail: `not writable: ${problem}` }
  let free: number
  try {
    const fs = statfsSync(dir)
    free = fs.bavail * fs.bsize
  } catch {
    return { verdict: 'ok', what: 'database write', detail: 'writable' }
  }
  const shown = free >= 2 ** 30 ? `${(free / 2 ** 30).toFixed(1)} GiB` : `${(free / 2 ** 20).toFixed(1)} MiB`
  if (free < LOW_SPACE)
    return { verdict: 'warn', what: 'database write', detail: `writable, but only ${shown} free in ${dir}: clicks and links stop being stored when it is full` }
  return { verdict: 'ok', what: 'database write', detail: `writable, ${shown} free` }
}

function checkPort(what: string, host: string, port: number): Promise<Finding> {
  if (port === 0) return Promise.resolve({ verdict: 'ok', what, detail: 'port 0: any free port is taken at start' })
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', (err: NodeJS.ErrnoException) =>
      resolve({
        verdict: 'warn',
        what,
        detail: `${host}:${port} cannot be bound (${err.code ?? err.message})${err.code === 'EADDRINUSE' ? ': is linkbox already running?' : ''}`,
      }),
    )
    server.listen(port, host, () => server.close(() => resolve({ verdict: 'ok', what, detail: `${host}:${port} is free` })))
  })
}

async function checkProgram(what: string, command: string[], needed: string): Promise<Finding> {
  try {
    const proc = Bun.spawn(command, { stdout: 'pipe', stderr: 'pipe', timeout: 10_000 })
    const out = (await new Response(proc.stdout).text()).split('\n')[0]!.trim()
    if ((await proc.exited) !== 0) return { verdict: 'warn', what, detail: `${command[0]} did not run: ${needed}` }
    return { verdict: 'ok', what, detail: `${command[0]}: ${out}` }
  } catch {
    return { verdict: 'warn', what, detail: `${command[0]} not found: ${needed}` }
  }
}

/**
 * Which yt-dlp the media service would run now (after extracting the bundled one, as serve does), its version,
 * and what this binary carries: a build without one, or python3 missing for a zipapp, is said here.
 */
async function checkYtdlp(config: Config): Promise<Finding[]> {
  const needed = 'needed for media download'
  const ytdlp = createYtdlp({ ytdlpPath: config.media.ytdlp_path, dataDir: config.data_dir })
  const findings: Finding[] = []
  const embedded = await embeddedYtdlp()
  try {
    await ytdlp.prepare()
    findings.push(
      embedded
        ? { verdict: 'ok', what: 'yt-dlp bundled', detail: `${embedded.meta.version} (${embedded.meta.source}), in ${join(config.data_dir, 'bin')}` }
        : Bun.isStandaloneExecutable
          ? { verdict: 'warn', what: 'yt-dlp bundled', detail: 'none: this binary was built without a yt-dlp (media.ytdlp_path or one on PATH is used)' }
          : { verdict: 'ok', what: 'yt-dlp bundled', detail: 'none: run from source (only a built binary carries one)' },
    )
  } catch (err) {
    findings.push({ verdict: 'warn', what: 'yt-dlp bundled', detail: `not extracted into ${join(config.data_dir, 'bin')}: ${(err as Error).message}` })
  }
  const used = await ytdlp.current()
  const python = Bun.which('python3')
  if (!used) findings.push({ verdict: 'warn', what: 'yt-dlp', detail: `none found (no media.ytdlp_path, none bundled, none on PATH): ${needed}` })
  else if (!used.version) {
    const why = !existsSync(used.path) ? 'not found' : used.source === 'config' || python ? 'does not run --version' : 'is a zipapp and python3 is not on PATH'
    findings.push({ verdict: 'warn', what: 'yt-dlp', detail: `${used.path} ${why}: ${needed}` })
  } else findings.push({ verdict: 'ok', what: 'yt-dlp', detail: `${used.source}: ${used.path}, version ${used.version}` })
  findings.push(
    python
      ? await checkProgram('python3', [python, '--version'], 'needed to run a yt-dlp zipapp (the bundled one is)')
      : { verdict: 'warn', what: 'python3', detail: 'not found on PATH: needed to run a yt-dlp zipapp (the bundled one is)' },
  )
  return findings
}

const size = (bytes: number) =>
  bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(1)} GiB` : bytes >= 2 ** 20 ? `${(bytes / 2 ** 20).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`

/** STARTTLS: the certificate and key load, belong together and are in date (a sender may refuse an expired one). */
function checkTls(config: Config): Finding {
  const { tls_cert, tls_key } = config.mail
  if (!tls_cert) return { verdict: 'ok', what: 'mail.tls', detail: 'no mail.tls_cert/tls_key: STARTTLS is not offered (mail arrives unencrypted)' }
  let cert: X509Certificate
  try {
    cert = new X509Certificate(readFileSync(tls_cert))
  } catch (err) {
    return { verdict: 'FAIL', what: 'mail.tls', detail: `mail.tls_cert ${tls_cert}: ${(err as Error).message}` }
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(readFileSync(tls_key))))
      return { verdict: 'FAIL', what: 'mail.tls', detail: `mail.tls_key ${tls_key} is not the key of the certificate ${tls_cert}` }
  } catch (err) {
    return { verdict: 'FAIL', what: 'mail.tls', detail: `mail.tls_key ${tls_key}: ${(err as Error).message}` }
  }
  const until = Date.parse(cert.validTo)
  if (until < Date.now()) return { verdict: 'warn', what: 'mail.tls', detail: `the certificate expired on ${cert.validTo}` }
  return { verdict: 'ok', what: 'mail.tls', detail: `STARTTLS with ${cert.subject.replace(/\n/g, ', ')}, valid until ${cert.validTo}` }
}

/**
 * What the mail store's files take on disk (a walk of data_dir/mail: the larger messages; small ones are in
 * the database, see linkbox_mail_bytes in /metrics), and leftovers of crashes waiting for the sweep.
 */
function checkMailStore(dataDir: string): Finding {
  const root = join(dataDir, 'mail')
  if (!existsSync(root)) return { verdict: 'ok', what: 'mail store', detail: `${root}: empty (no mail received yet)` }
  let bytes = 0
  let files = 0
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) {
        files++
        bytes += statSync(path).size
      }
    }
  }
  try {
    walk(root)
    const incoming = existsSync(join(root, 'incoming')) ? readdirSync(join(root, 'incoming')).length : 0
    const leftovers = incoming ? `; ${incoming} unfinished in incoming/ (removed by the hourly sweep)` : ''
    return { verdict: 'ok', what: 'mail store', detail: `${root}: ${size(bytes)} in ${files} files (small messages are in the database)${leftovers}` }
  } catch (err) {
    return { verdict: 'warn', what: 'mail store', detail: `${root}: ${(err as Error).message}` }
  }
}

function checkBaseUrl(config: Config): Finding {
  const host = new URL(config.server.base_url).hostname
  if ((host === 'localhost' || host.startsWith('127.')) && config.server.host !== '127.0.0.1' && config.server.host !== 'localhost')
    return {
      verdict: 'warn',
      what: 'server.base_url',
      detail: `${config.server.base_url}: short links will point at this machine only; set the public address`,
    }
  return { verdict: 'ok', what: 'server.base_url', detail: config.server.base_url }
}

export async function runDoctor(config: Config, source: string): Promise<Finding[]> {
  const findings: Finding[] = [{ verdict: 'ok', what: 'config', detail: source }]
  const dataDir = checkDataDir(config.data_dir)
  findings.push(dataDir)
  if (dataDir.verdict === 'ok') findings.push(...checkDatabase(config.data_dir))
  else findings.push({ verdict: 'skip', what: 'database', detail: 'the data directory is not usable' })
  findings.push(await checkPort('server.port', config.server.host, config.server.port))
  if (config.mail.smtp_port !== 0) findings.push(await checkPort('mail.smtp_port', config.mail.smtp_host, config.mail.smtp_port))
  findings.push(checkTls(config))
  if (dataDir.verdict === 'ok') findings.push(checkMailStore(config.data_dir))
  findings.push(checkBaseUrl(config))
  const media = 'needed for media download'
  if (dataDir.verdict === 'ok') findings.push(...(await checkYtdlp(config)))
  else findings.push({ verdict: 'skip', what: 'yt-dlp', detail: 'the data directory is not usable' })
  findings.push(await checkProgram('ffmpeg', ['ffmpeg', '-version'], `${media} (merging formats)`))
  return findings
}

/**
 * The findings when the config itself does not load: that FAIL, the checks that need it skipped, and the
 * one that does not (ffmpeg), so a single run still shows everything it can.
 */
export async function configFailure(path: string, problem: string): Promise<Finding[]> {
  const why = problem.replace(/^config: /, '')
  const skipped = 'needs a config that loads'
  return [
    { verdict: 'FAIL', what: 'config', detail: path && !why.includes(path) ? `${path}: ${why}` : why },
    ...['data_dir', 'database', 'server.port', 'mail.smtp_port', 'mail.tls', 'mail store', 'server.base_url', 'yt-dlp bundled', 'yt-dlp'].map(
      (what): Finding => ({ verdict: 'skip', what, detail: skipped }),
    ),
    await checkProgram('ffmpeg', ['ffmpeg', '-version'], 'needed for media download (merging formats)'),
    await checkProgram('python3', ['python3', '--version'], 'needed to run a yt-dlp zipapp (the bundled one is)'),
  ]
}

export function formatFindings(findings: Finding[]): string {
  return findings.map((f) => `${f.verdict.padEnd(4)}  ${f.what.padEnd(16)} ${f.detail}`).join('\n')
}
