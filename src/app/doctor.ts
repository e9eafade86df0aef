// `linkbox doctor`: checks what the service needs before (or while) it runs, and says what to fix.
// A FAIL stops the service from working; a warn is worth knowing (a feature that will not work, a
// setting that is probably not what was meant); a skip is a check that could not run because one it
// depends on failed (no config: no data directory to look at).
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { promises as dns } from 'node:dns'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { checkDataDirMode } from './backup'
import { redactDatabaseUrl, type Config } from '../kernel/config'
import { DatabaseError, openDatabase, probeWrite, type Db } from '../db/sqlite'
import { migrations } from '../db/sqlite/migrations'
import { createGeo } from '../kernel/geo'
import { createYtdlp, embeddedYtdlp, isSafeYtdlpVersion, MIN_YTDLP_VERSION, unsafeYtdlpReason } from '../media/ytdlp'

export type Verdict = 'ok' | 'warn' | 'FAIL' | 'skip'
export interface Finding {
  verdict: Verdict
  what: string
  detail: string
}

function checkDataDir(dir: string): Finding {
  try {
    if (existsSync(dir) && !statSync(dir).isDirectory()) return { verdict: 'FAIL', what: 'data_dir', detail: `${dir} is not a directory` }
    // serve refuses to start on it: say why here, with the fix.
    const unsafe = checkDataDirMode(dir)
    if (unsafe) return { verdict: 'FAIL', what: 'data_dir', detail: unsafe.replace(/^data_dir /, '') }
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

/** PostgreSQL 14 or newer (SPEC §11): a FAIL below, naming what runs. server_version_num is e.g. 150008. */
export const MIN_POSTGRES = 14

export function judgePostgresVersion(versionNum: number, version: string): Finding {
  const major = Math.floor(versionNum / 10_000)
  if (major < MIN_POSTGRES) return { verdict: 'FAIL', what: 'database server', detail: `PostgreSQL ${version}: linkbox needs ${MIN_POSTGRES} or newer; upgrade the server` }
  return { verdict: 'ok', what: 'database server', detail: `PostgreSQL ${version}` }
}

/**
 * [database] url set: the connection (the URL shown with its password as ***), the server's version, and the
 * schema, read without changing anything (serve creates or upgrades it, under its lock). Also the newest
 * creation time, for the clock check.
 */
async function checkPostgres(url: string): Promise<{ findings: Finding[]; newest: number | null; mail: Finding }> {
  const { pgClient, pgReason, schemaVersion } = await import('../db/postgres')
  const { PG_SCHEMA_VERSION } = await import('../db/postgres/migrations')
  const { probePostgresWrite } = await import('../db/postgres/health')
  const shown = redactDatabaseUrl(url) ?? 'database.url'
  const sql = pgClient(url, { max: 1, connectionTimeout: 5 })
  const findings: Finding[] = []
  let newest: number | null = null
  // Mail lives in the database on this engine (the data directory holds none): counted there.
  let mail: Finding = { verdict: 'skip', what: 'mail store', detail: 'the database cannot be read' }
  try {
    let server: { num: number; version: string; standby: boolean }
    try {
      const [row] = await sql`SELECT current_setting('server_version_num')::int AS num, current_setting('server_version') AS version, pg_is_in_recovery() AS standby`
      server = { num: row.num, version: String(row.version).split(' ')[0]!, standby: row.standby }
    } catch (err) {
      return {
        findings: [
          { verdict: 'FAIL', what: 'database', detail: `${shown}: ${pgReason(err)}` },
          { verdict: 'skip', what: 'database server', detail: 'no connection' },
          { verdict: 'skip', what: 'database schema', detail: 'no connection' },
          { verdict: 'skip', what: 'database write', detail: 'no connection' },
        ],
        newest,
        mail,
      }
    }
    findings.push({ verdict: 'ok', what: 'database', detail: `${shown}: connected` })
    const judged = judgePostgresVersion(server.num, server.version)
    findings.push(
      judged.verdict === 'ok' && server.standby
        ? { verdict: 'FAIL', what: 'database server', detail: `PostgreSQL ${server.version} is a read-only standby: point database.url at the primary` }
        : judged,
    )
    try {
      const version = await schemaVersion(sql)
      if (version === null)
        findings.push({ verdict: 'FAIL', what: 'database schema', detail: "tables named like linkbox's (links, accounts) but no linkbox_schema: not a linkbox database; give linkbox an empty one" })
      else if (version === 0) {
        findings.push({ verdict: 'ok', what: 'database schema', detail: `empty, will be created at the first start (schema ${PG_SCHEMA_VERSION})` })
        mail = { verdict: 'ok', what: 'mail store', detail: 'in the database: empty (no mail received yet)' }
      }
      else if (version > PG_SCHEMA_VERSION)
        findings.push({ verdict: 'FAIL', what: 'database schema', detail: `schema ${version} is newer than this linkbox knows (${PG_SCHEMA_VERSION}): upgrade linkbox on this node` })
      else {
        findings.push(
          version < PG_SCHEMA_VERSION
            ? { verdict: 'ok', what: 'database schema', detail: `schema ${version}/${PG_SCHEMA_VERSION}: upgraded at the next start` }
            : { verdict: 'ok', what: 'database schema', detail: `schema ${version}/${PG_SCHEMA_VERSION}` },
        )
        const [row] = await sql`SELECT greatest((SELECT max(created) FROM accounts), (SELECT max(created) FROM links), (SELECT max(created) FROM webhook_events)) AS newest`
        newest = row.newest === null ? null : Number(row.newest)
        // The mailboxes' own counters (kept by triggers): one read however much mail there is.
        const [m] = await sql`SELECT count(*) AS mailboxes, coalesce(sum(messages), 0) AS messages, coalesce(sum(bytes), 0) AS bytes FROM mailboxes`
        mail = { verdict: 'ok', what: 'mail store', detail: `in the database: ${size(Number(m.bytes))} in ${Number(m.messages)} messages, ${Number(m.mailboxes)} mailboxes` }
      }
    } catch (err) {
      findings.push({ verdict: 'FAIL', what: 'database schema', detail: `cannot be read: ${pgReason(err)}` })
    }
    // A write that is rolled back (the schema's row, or on an empty database the CREATE TABLE the first start needs).
    try {
      await probePostgresWrite(sql, 5_000)
      findings.push({ verdict: 'ok', what: 'database write', detail: 'writable (a write tried and rolled back)' })
    } catch (err) {
      findings.push({ verdict: 'FAIL', what: 'database write', detail: `not writable: ${pgReason(err)}` })
    }
    return { findings, newest, mail }
  } finally {
    await sql.close().catch(() => {})
  }
}

/** A write in a transaction that is rolled back, and the free space left for the ones that are kept (judged by checkDisk). */
function checkWritable(db: Db, dir: string): Finding {
  const problem = probeWrite(db)
  if (problem) return { verdict: 'FAIL', what: 'database write', detail: `not writable: ${problem}` }
  const free = freeBytes(dir)
  return { verdict: 'ok', what: 'database write', detail: free === null ? 'writable' : `writable, ${size(free)} free` }
}

function freeBytes(dir: string): number | null {
  try {
    const fs = statfsSync(dir)
    return fs.bavail * fs.bsize
  } catch {
    return null
  }
}

export const DISK_WARN = 2 ** 30
export const DISK_FAIL = 100 * 2 ** 20

/** Free space for data_dir: under 1 GiB a warning (mail and the media cache fill it fast), under 100 MiB a FAIL. */
export function checkDisk(dir: string, free: number | null = freeBytes(dir)): Finding {
  if (free === null) return { verdict: 'warn', what: 'free disk', detail: `${dir}: the free space cannot be read` }
  const where = `${size(free)} free for ${dir}`
  if (free < DISK_FAIL) return { verdict: 'FAIL', what: 'free disk', detail: `only ${where}: links, clicks and mail stop being stored when it is full; free some space` }
  if (free < DISK_WARN) return { verdict: 'warn', what: 'free disk', detail: `only ${where}: under 1 GiB, mail and the media cache can fill it` }
  return { verdict: 'ok', what: 'free disk', detail: where }
}

/**
 * The clock: signed links, expiries and mailbox lifetimes all read it. A clock behind the time this program
 * file was written, or behind the newest row in the database, has been reset (a board without a battery).
 */
export function checkClock(now: number, built: number | null, newestRow: number | null): Finding {
  const at = (ms: number) => new Date(ms).toISOString().slice(0, 19) + 'Z'
  if (built !== null && now < built)
    return { verdict: 'warn', what: 'clock', detail: `${at(now)} is before this linkbox was built (${at(built)}): set the time (timedatectl set-ntp true); links and mail expire wrongly` }
  if (newestRow !== null && now < newestRow)
    return { verdict: 'warn', what: 'clock', detail: `${at(now)} is before the newest row in the database (${at(newestRow)}): the clock went back; set the time (timedatectl set-ntp true)` }
  return { verdict: 'ok', what: 'clock', detail: at(now) }
}

/** The newest creation time in the database: one row by the primary key of each table that grows, cheap. */
function newestRow(dataDir: string): number | null {
  const path = join(dataDir, 'linkbox.db')
  if (!existsSync(path)) return null
  let db: Db | undefined
  try {
    db = openDatabase(path)
    let newest: number | null = null
    for (const table of ['accounts', 'links', 'webhook_events']) {
      const row = db.query(`SELECT created FROM ${table} ORDER BY id DESC LIMIT 1`).get() as { created: number } | null
      if (row && (newest === null || row.created > newest)) newest = row.created
    }
    return newest
  } catch {
    return null // the database check says what is wrong with it
  } finally {
    db?.close()
  }
}

/** When this program was built: the compiled binary's file time (run from source: unknown). */
const buildTime = (): number | null => {
  if (!Bun.isStandaloneExecutable) return null
  try {
    return statSync(process.execPath).mtimeMs
  } catch {
    return null
  }
}

type ResolveMx = (domain: string) => Promise<{ exchange: string; priority: number }[]>

/**
 * Where the world sends mail for each domain: a hint only (a warn, never a FAIL) — the MX may point at a
 * relay in front of linkbox, and this machine may be offline or unable to ask. Each lookup has its own timeout.
 */
export async function checkMx(config: Config, resolveMx: ResolveMx = (d) => dns.resolveMx(d), timeoutMs = 3000): Promise<Finding[]> {
  if (config.mail.smtp_port === 0) return [{ verdict: 'ok', what: 'mail MX', detail: 'mail.smtp_port is 0: no mail is received' }]
  return Promise.all(
    config.mail.domains.map(async (domain): Promise<Finding> => {
      let timer: ReturnType<typeof setTimeout> | undefined
      try {
        const records = await Promise.race([
          resolveMx(domain),
          new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs))),
        ])
        if (records.length === 0) return { verdict: 'warn', what: 'mail MX', detail: `${domain} has no MX record: senders will not find this server` }
        const hosts = [...records].sort((a, b) => a.priority - b.priority).map((r) => r.exchange)
        return { verdict: 'ok', what: 'mail MX', detail: `${domain} → ${hosts.join(', ')} (should reach port ${config.mail.smtp_port} here, or a relay to it)` }
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        return { verdict: 'warn', what: 'mail MX', detail: `${domain}: no MX record found (${code ?? (err as Error).message}): senders will not find this server; ignore this offline or behind a relay` }
      } finally {
        clearTimeout(timer)
      }
    }),
  )
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

/** links.blocklist_files: each file read as serve reads it, its hosts and its age (a list never updated goes stale). */
async function checkBlocklists(config: Config): Promise<Finding[]> {
  if (config.links.blocklist_files.length === 0) return [{ verdict: 'ok', what: 'blocklists', detail: 'none (links.blocklist_files)' }]
  const { loadBlocklist } = await import('../abuse/blocklist')
  const list = await loadBlocklist(config.links.blocklist_files)
  const days = (ms: number) => Math.floor((Date.now() - ms) / 86_400_000)
  return list.files.map((f): Finding => {
    if (f.error) return { verdict: 'FAIL', what: 'blocklist', detail: `${f.path}: cannot be read (${f.error}); serve runs without it` }
    const age = f.mtime === null ? null : days(f.mtime)
    const detail = `${f.path}: ${f.hosts} hosts, changed ${age === null ? '?' : age === 0 ? 'today' : `${age} days ago`}`
    if (f.hosts === 0) return { verdict: 'warn', what: 'blocklist', detail: `${detail}: no host found in it (one a line, hosts format, or ||host^)` }
    return age !== null && age > 30 ? { verdict: 'warn', what: 'blocklist', detail: `${detail}: older than 30 days, update it` } : { verdict: 'ok', what: 'blocklist', detail }
  })
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
  } else if (!isSafeYtdlpVersion(used.version))
    findings.push({
      verdict: 'FAIL',
      what: 'yt-dlp',
      detail: `${used.source}: ${used.path}: ${unsafeYtdlpReason(used.version)}; media download refuses it. Fix: \`linkbox ytdlp update\`, or point media.ytdlp_path at yt-dlp ${MIN_YTDLP_VERSION} or later`,
    })
  else findings.push({ verdict: 'ok', what: 'yt-dlp', detail: `${used.source}: ${used.path}, version ${used.version}` })
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

/**
 * [oidc]: the provider's discovery document, fetched as the sign-in will fetch it, and whether this client can
 * work with it: the issuer it names, the endpoints the code flow needs, PKCE with S256; with the redirect
 * URI to register there.
 */
export async function checkOidc(config: Config, timeoutMs = 5000): Promise<Finding> {
  const o = config.oidc
  const what = 'oidc'
  if (!o.issuer) return { verdict: 'ok', what, detail: 'no oidc.issuer: single sign-on is off' }
  const url = `${o.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
  let doc: Record<string, unknown>
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual', headers: { accept: 'application/json' } })
    if (res.status !== 200) return { verdict: 'FAIL', what, detail: `${url} answered HTTP ${res.status}: is oidc.issuer the provider's issuer URL?` }
    doc = (await res.json()) as Record<string, unknown>
    if (doc === null || typeof doc !== 'object') throw new Error('not a JSON object')
  } catch (err) {
    const why = (err as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : (err as Error).message
    return { verdict: 'FAIL', what, detail: `${url}: ${why}; "Sign in with ${o.name}" answers that the provider cannot be reached` }
  }
  const sameIssuer = (() => {
    try {
      return typeof doc.issuer === 'string' && new URL(doc.issuer).href === new URL(o.issuer).href
    } catch {
      return false
    }
  })()
  if (!sameIssuer) return { verdict: 'FAIL', what, detail: `the provider's issuer is ${JSON.stringify(doc.issuer)}, not oidc.issuer ${JSON.stringify(o.issuer)}: set oidc.issuer to exactly that` }
  const missing = ['authorization_endpoint', 'token_endpoint', 'jwks_uri'].filter((k) => typeof doc[k] !== 'string')
  if (missing.length) return { verdict: 'FAIL', what, detail: `${o.issuer}: the discovery document has no ${missing.join(', ')}: the sign-in cannot work` }
  const pkce = doc.code_challenge_methods_supported
  if (Array.isArray(pkce) && !pkce.includes('S256')) return { verdict: 'FAIL', what, detail: `${o.issuer} does not take PKCE with S256 (code_challenge_methods_supported): the sign-in cannot work` }
  const redirect = `${config.server.base_url}/login/oidc/callback`
  const notes: string[] = []
  const scopes = doc.scopes_supported
  const wanted = o.scopes.split(' ')
  const unknown = Array.isArray(scopes) ? wanted.filter((s) => !scopes.includes(s)) : []
  if (typeof doc.end_session_endpoint !== 'string') notes.push("it has no end_session_endpoint: sign-out ends linkbox's session only")
  const register = `register the redirect URI ${redirect}${typeof doc.end_session_endpoint === 'string' ? ` and the post-logout redirect URI ${config.server.base_url}/` : ''}`
  const httpRedirect = redirect.startsWith('http:') && !/^http:\/\/(localhost|127\.|\[::1\])/.test(redirect)
  if (unknown.length || httpRedirect)
    return {
      verdict: 'warn',
      what,
      detail: `${o.issuer}: discovery ok; ${[
        ...(unknown.length ? [`it does not list the scope${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (oidc.scopes)${o.admin_groups.length ? ': without a groups claim nobody is made admin' : ''}`] : []),
        ...(httpRedirect ? [`server.base_url is http: most providers refuse an http redirect URI`] : []),
        ...notes,
      ].join('; ')}; ${register}`,
    }
  return { verdict: 'ok', what, detail: `${o.issuer}: discovery ok${notes.length ? `; ${notes.join('; ')}` : ''}; ${register}` }
}

/** The country database (SPEC §4): readable, a MaxMind-format file, and not years old. */
export function checkGeo(config: Config, now = Date.now()): Finding {
  try {
    const geo = createGeo({ database: config.geo.database })
    const { database, built } = geo.source()
    const located = geo.country('8.8.8.8') // in every country database there is
    const what = database === 'embedded' ? 'the embedded database' : database
    if (!located) return { verdict: 'warn', what: 'geo.database', detail: `${what} does not locate 8.8.8.8: is it a country database? Countries will show as "unknown"` }
    const age = built ? (now - Date.parse(built)) / 86_400_000 : null
    if (age !== null && age > 730)
      return { verdict: 'warn', what: 'geo.database', detail: `${what} was built ${built!.slice(0, 10)}, ${Math.floor(age / 365)} years ago: countries of newer address blocks will be wrong` }
    return { verdict: 'ok', what: 'geo.database', detail: `${what}${built ? `, built ${built.slice(0, 10)}` : ''}` }
  } catch (err) {
    return { verdict: 'FAIL', what: 'geo.database', detail: (err as Error).message.replace(/^config: "geo\.database" /, '') }
  }
}

export async function runDoctor(config: Config, source: string): Promise<Finding[]> {
  const findings: Finding[] = [{ verdict: 'ok', what: 'config', detail: source }]
  const dataDir = checkDataDir(config.data_dir)
  findings.push(dataDir)
  // On PostgreSQL the data directory still holds the media cache and yt-dlp; the database is the server's.
  const postgres = config.database.url ? await checkPostgres(config.database.url) : null
  if (postgres) findings.push(...postgres.findings)
  else if (dataDir.verdict === 'ok') findings.push(...checkDatabase(config.data_dir))
  else findings.push({ verdict: 'skip', what: 'database', detail: 'the data directory is not usable' })
  findings.push(await checkPort('server.port', config.server.host, config.server.port))
  if (config.mail.smtp_port !== 0) findings.push(await checkPort('mail.smtp_port', config.mail.smtp_host, config.mail.smtp_port))
  findings.push(checkTls(config))
  if (postgres) findings.push(postgres.mail)
  else if (dataDir.verdict === 'ok') findings.push(checkMailStore(config.data_dir))
  findings.push(...(await checkMx(config)))
  if (dataDir.verdict === 'ok') findings.push(checkDisk(config.data_dir), checkClock(Date.now(), buildTime(), postgres ? postgres.newest : newestRow(config.data_dir)))
  else findings.push({ verdict: 'skip', what: 'free disk', detail: 'the data directory is not usable' }, { verdict: 'skip', what: 'clock', detail: 'the data directory is not usable' })
  findings.push(checkBaseUrl(config))
  findings.push(await checkOidc(config))
  findings.push(checkGeo(config))
  findings.push(...(await checkBlocklists(config)))
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
    ...['data_dir', 'database', 'server.port', 'mail.smtp_port', 'mail.tls', 'mail store', 'mail MX', 'free disk', 'clock', 'server.base_url', 'oidc', 'blocklists', 'yt-dlp bundled', 'yt-dlp'].map(
      (what): Finding => ({ verdict: 'skip', what, detail: skipped }),
    ),
    await checkProgram('ffmpeg', ['ffmpeg', '-version'], 'needed for media download (merging formats)'),
    await checkProgram('python3', ['python3', '--version'], 'needed to run a yt-dlp zipapp (the bundled one is)'),
  ]
}

export function formatFindings(findings: Finding[]): string {
  return findings.map((f) => `${f.verdict.padEnd(4)}  ${f.what.padEnd(16)} ${f.detail}`).join('\n')
}
