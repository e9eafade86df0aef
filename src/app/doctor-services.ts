// doctor's checks of what the features need: ports, mail (TLS, store, MX), base_url, OIDC, geo, blocklists, yt-dlp.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { promises as dns } from 'node:dns'
import { createServer } from 'node:net'
import { join } from 'node:path'
import type { Config } from '../kernel/config'
import { createGeo } from '../kernel/geo'
import { createYtdlp, embeddedYtdlp, isSafeYtdlpVersion, MIN_YTDLP_VERSION, unsafeYtdlpReason } from '../media'
import { size, type Finding } from './doctor-finding'

type ResolveMx = (domain: string) => Promise<{ exchange: string; priority: number }[]>

/**
 * Where the world sends mail for each domain: a hint only (a warn, never a FAIL) — the MX may point at a
 * relay in front of linkbox, and this machine may be offline or unable to ask. Each lookup has its own timeout.
 */
export async function checkMx(
  config: Config,
  resolveMx: ResolveMx = (d) => dns.resolveMx(d),
  timeoutMs = 3000,
): Promise<Finding[]> {
  if (config.mail.smtp_port === 0)
    return [{ verdict: 'ok', what: 'mail MX', detail: 'mail.smtp_port is 0: no mail is received' }]
  return Promise.all(
    config.mail.domains.map(async (domain): Promise<Finding> => {
      let timer: ReturnType<typeof setTimeout> | undefined
      try {
        const records = await Promise.race([
          resolveMx(domain),
          new Promise<never>(
            (_, reject) =>
              (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs)),
          ),
        ])
        if (records.length === 0)
          return {
            verdict: 'warn',
            what: 'mail MX',
            detail: `${domain} has no MX record: senders will not find this server`,
          }
        const hosts = [...records].sort((a, b) => a.priority - b.priority).map((r) => r.exchange)
        return {
          verdict: 'ok',
          what: 'mail MX',
          detail: `${domain} → ${hosts.join(', ')} (should reach port ${config.mail.smtp_port} here, or a relay to it)`,
        }
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        return {
          verdict: 'warn',
          what: 'mail MX',
          detail: `${domain}: no MX record found (${code ?? (err as Error).message}): senders will not find this server; ignore this offline or behind a relay`,
        }
      } finally {
        clearTimeout(timer)
      }
    }),
  )
}

export function checkPort(what: string, host: string, port: number): Promise<Finding> {
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
    server.listen(port, host, () =>
      server.close(() => resolve({ verdict: 'ok', what, detail: `${host}:${port} is free` })),
    )
  })
}

export async function checkProgram(what: string, command: string[], needed: string): Promise<Finding> {
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
export async function checkBlocklists(config: Config): Promise<Finding[]> {
  if (config.links.blocklist_files.length === 0)
    return [{ verdict: 'ok', what: 'blocklists', detail: 'none (links.blocklist_files)' }]
  const { loadBlocklist } = await import('../abuse')
  const list = await loadBlocklist(config.links.blocklist_files)
  const days = (ms: number) => Math.floor((Date.now() - ms) / 86_400_000)
  return list.files.map((f): Finding => {
    if (f.error)
      return {
        verdict: 'FAIL',
        what: 'blocklist',
        detail: `${f.path}: cannot be read (${f.error}); serve runs without it`,
      }
    const age = f.mtime === null ? null : days(f.mtime)
    const detail = `${f.path}: ${f.hosts} hosts, changed ${age === null ? '?' : age === 0 ? 'today' : `${age} days ago`}`
    if (f.hosts === 0)
      return {
        verdict: 'warn',
        what: 'blocklist',
        detail: `${detail}: no host found in it (one a line, hosts format, or ||host^)`,
      }
    return age !== null && age > 30
      ? { verdict: 'warn', what: 'blocklist', detail: `${detail}: older than 30 days, update it` }
      : { verdict: 'ok', what: 'blocklist', detail }
  })
}

/**
 * Which yt-dlp the media service would run now (after extracting the bundled one, as serve does), its version,
 * and what this binary carries: a build without one, or python3 missing for a zipapp, is said here.
 */
export async function checkYtdlp(config: Config): Promise<Finding[]> {
  const needed = 'needed for media download'
  const ytdlp = createYtdlp({ ytdlpPath: config.media.ytdlp_path, dataDir: config.data_dir })
  const findings: Finding[] = []
  const embedded = await embeddedYtdlp()
  try {
    await ytdlp.prepare()
    findings.push(
      embedded
        ? {
            verdict: 'ok',
            what: 'yt-dlp bundled',
            detail: `${embedded.meta.version} (${embedded.meta.source}), in ${join(config.data_dir, 'bin')}`,
          }
        : Bun.isStandaloneExecutable
          ? {
              verdict: 'warn',
              what: 'yt-dlp bundled',
              detail: 'none: this binary was built without a yt-dlp (media.ytdlp_path or one on PATH is used)',
            }
          : {
              verdict: 'ok',
              what: 'yt-dlp bundled',
              detail: 'none: run from source (only a built binary carries one)',
            },
    )
  } catch (err) {
    findings.push({
      verdict: 'warn',
      what: 'yt-dlp bundled',
      detail: `not extracted into ${join(config.data_dir, 'bin')}: ${(err as Error).message}`,
    })
  }
  const used = await ytdlp.current()
  const python = Bun.which('python3')
  if (!used)
    findings.push({
      verdict: 'warn',
      what: 'yt-dlp',
      detail: `none found (no media.ytdlp_path, none bundled, none on PATH): ${needed}`,
    })
  else if (!used.version) {
    const why = !existsSync(used.path)
      ? 'not found'
      : used.source === 'config' || python
        ? 'does not run --version'
        : 'is a zipapp and python3 is not on PATH'
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
      : {
          verdict: 'warn',
          what: 'python3',
          detail: 'not found on PATH: needed to run a yt-dlp zipapp (the bundled one is)',
        },
  )
  return findings
}

/** STARTTLS: the certificate and key load, belong together and are in date (a sender may refuse an expired one). */
export function checkTls(config: Config): Finding {
  const { tls_cert, tls_key } = config.mail
  if (!tls_cert)
    return {
      verdict: 'ok',
      what: 'mail.tls',
      detail: 'no mail.tls_cert/tls_key: STARTTLS is not offered (mail arrives unencrypted)',
    }
  let cert: X509Certificate
  try {
    cert = new X509Certificate(readFileSync(tls_cert))
  } catch (err) {
    return { verdict: 'FAIL', what: 'mail.tls', detail: `mail.tls_cert ${tls_cert}: ${(err as Error).message}` }
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(readFileSync(tls_key))))
      return {
        verdict: 'FAIL',
        what: 'mail.tls',
        detail: `mail.tls_key ${tls_key} is not the key of the certificate ${tls_cert}`,
      }
  } catch (err) {
    return { verdict: 'FAIL', what: 'mail.tls', detail: `mail.tls_key ${tls_key}: ${(err as Error).message}` }
  }
  const until = Date.parse(cert.validTo)
  if (until < Date.now())
    return { verdict: 'warn', what: 'mail.tls', detail: `the certificate expired on ${cert.validTo}` }
  return {
    verdict: 'ok',
    what: 'mail.tls',
    detail: `STARTTLS with ${cert.subject.replace(/\n/g, ', ')}, valid until ${cert.validTo}`,
  }
}

/**
 * What the mail store's files take on disk (a walk of data_dir/mail: the larger messages; small ones are in
 * the database, see linkbox_mail_bytes in /metrics), and leftovers of crashes waiting for the sweep.
 */
export function checkMailStore(dataDir: string): Finding {
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
    return {
      verdict: 'ok',
      what: 'mail store',
      detail: `${root}: ${size(bytes)} in ${files} files (small messages are in the database)${leftovers}`,
    }
  } catch (err) {
    return { verdict: 'warn', what: 'mail store', detail: `${root}: ${(err as Error).message}` }
  }
}

export function checkBaseUrl(config: Config): Finding {
  const host = new URL(config.server.base_url).hostname
  if (
    (host === 'localhost' || host.startsWith('127.')) &&
    config.server.host !== '127.0.0.1' &&
    config.server.host !== 'localhost'
  )
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
    const res = await fetch(url, {
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'manual',
      headers: { accept: 'application/json' },
    })
    if (res.status !== 200)
      return {
        verdict: 'FAIL',
        what,
        detail: `${url} answered HTTP ${res.status}: is oidc.issuer the provider's issuer URL?`,
      }
    doc = (await res.json()) as Record<string, unknown>
    if (doc === null || typeof doc !== 'object') throw new Error('not a JSON object')
  } catch (err) {
    const why =
      (err as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : (err as Error).message
    return {
      verdict: 'FAIL',
      what,
      detail: `${url}: ${why}; "Sign in with ${o.name}" answers that the provider cannot be reached`,
    }
  }
  const sameIssuer = (() => {
    try {
      return typeof doc.issuer === 'string' && new URL(doc.issuer).href === new URL(o.issuer).href
    } catch {
      return false
    }
  })()
  if (!sameIssuer)
    return {
      verdict: 'FAIL',
      what,
      detail: `the provider's issuer is ${JSON.stringify(doc.issuer)}, not oidc.issuer ${JSON.stringify(o.issuer)}: set oidc.issuer to exactly that`,
    }
  const missing = ['authorization_endpoint', 'token_endpoint', 'jwks_uri'].filter((k) => typeof doc[k] !== 'string')
  if (missing.length)
    return {
      verdict: 'FAIL',
      what,
      detail: `${o.issuer}: the discovery document has no ${missing.join(', ')}: the sign-in cannot work`,
    }
  const pkce = doc.code_challenge_methods_supported
  if (Array.isArray(pkce) && !pkce.includes('S256'))
    return {
      verdict: 'FAIL',
      what,
      detail: `${o.issuer} does not take PKCE with S256 (code_challenge_methods_supported): the sign-in cannot work`,
    }
  const redirect = `${config.server.base_url}/login/oidc/callback`
  const notes: string[] = []
  const scopes = doc.scopes_supported
  const wanted = o.scopes.split(' ')
  const unknown = Array.isArray(scopes) ? wanted.filter((s) => !scopes.includes(s)) : []
  if (typeof doc.end_session_endpoint !== 'string')
    notes.push("it has no end_session_endpoint: sign-out ends linkbox's session only")
  const register = `register the redirect URI ${redirect}${typeof doc.end_session_endpoint === 'string' ? ` and the post-logout redirect URI ${config.server.base_url}/` : ''}`
  const httpRedirect = redirect.startsWith('http:') && !/^http:\/\/(localhost|127\.|\[::1\])/.test(redirect)
  if (unknown.length || httpRedirect)
    return {
      verdict: 'warn',
      what,
      detail: `${o.issuer}: discovery ok; ${[
        ...(unknown.length
          ? [
              `it does not list the scope${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (oidc.scopes)${o.admin_groups.length ? ': without a groups claim nobody is made admin' : ''}`,
            ]
          : []),
        ...(httpRedirect ? [`server.base_url is http: most providers refuse an http redirect URI`] : []),
        ...notes,
      ].join('; ')}; ${register}`,
    }
  return {
    verdict: 'ok',
    what,
    detail: `${o.issuer}: discovery ok${notes.length ? `; ${notes.join('; ')}` : ''}; ${register}`,
  }
}

/** The country database (SPEC §4): readable, a MaxMind-format file, and not years old. */
export function checkGeo(config: Config, now = Date.now()): Finding {
  try {
    const geo = createGeo({ database: config.geo.database })
    const { database, built } = geo.source()
    const located = geo.country('8.8.8.8') // in every country database there is
    const what = database === 'embedded' ? 'the embedded database' : database
    if (!located)
      return {
        verdict: 'warn',
        what: 'geo.database',
        detail: `${what} does not locate 8.8.8.8: is it a country database? Countries will show as "unknown"`,
      }
    const age = built ? (now - Date.parse(built)) / 86_400_000 : null
    if (age !== null && age > 730)
      return {
        verdict: 'warn',
        what: 'geo.database',
        detail: `${what} was built ${built!.slice(0, 10)}, ${Math.floor(age / 365)} years ago: countries of newer address blocks will be wrong`,
      }
    return { verdict: 'ok', what: 'geo.database', detail: `${what}${built ? `, built ${built.slice(0, 10)}` : ''}` }
  } catch (err) {
    return {
      verdict: 'FAIL',
      what: 'geo.database',
      detail: (err as Error).message.replace(/^config: "geo\.database" /, ''),
    }
  }
}
