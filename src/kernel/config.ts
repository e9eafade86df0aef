// Configuration: one TOML file, every key optional. An unknown key or a bad value stops start-up with a
// message that names the key, so a typo never silently falls back to a default.
import { readFileSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import {
  baseUrl,
  bearerToken,
  bool,
  cidr,
  headerName,
  hostname,
  hostOrAddress,
  int,
  issuerUrl,
  list,
  oneOf,
  secretString,
  str,
  type Check,
} from './config-checks'
import { databaseUrl } from './config-database'
import { type DomainPages, domainTables, settleDomains } from './config-domains'
import { ConfigError } from './errors'
import { canonicalIp } from './net/cidr'

export interface Config {
  data_dir: string
  server: {
    host: string
    port: number
    base_url: string
    trusted_proxies: string[]
    /** Set: /metrics also answers `Authorization: Bearer <this>` from any address (SPEC §10). Empty: loopback and private networks only. */
    metrics_token: string
    /** Short domains beside base_url's host (SPEC §13), lower case, without it. */
    domains: string[]
  }
  /** Per short domain (base_url's host or one of server.domains): where its root and an unknown code go. */
  domains: Record<string, DomainPages>
  links: {
    redirect_status: number
    blocked_domains: string[]
    /** false: getLink.json needs a key (401 missing_key) and the home form asks to sign in. */
    anonymous: boolean
    /** Files of hosts (one a line, hosts format, or ||host^), read at start and on SIGHUP. */
    blocklist_files: string[]
    /** An import file with more rows is refused whole (SPEC §2a). */
    import_max_rows: number
    /** Keyed links made without a title get their destination's title (and preview defaults) fetched once (SPEC §2a). */
    fetch_metadata: boolean
  }
  rate: { anon_per_minute: number; anon_per_day: number; key_per_minute: number }
  mail: {
    domains: string[]
    smtp_host: string
    smtp_port: number
    mailbox_ttl: number
    max_message_bytes: number
    max_messages: number
    /** PEM files for STARTTLS; both empty (the default): no STARTTLS. Relative paths are relative to the config file. */
    tls_cert: string
    tls_key: string
    max_connections_per_ip: number
  }
  media: {
    ytdlp_path: string
    allow_private_networks: boolean
    max_concurrent: number
    link_ttl: number
    extract_timeout: number
    /** Bytes kept in data_dir/media/cache (segmented and merged formats, fetched whole before they are served). */
    cache_max_bytes: number
    /** Entries download.json?playlist=1 lists at most (SPEC §6). */
    playlist_max: number
  }
  marketplace: { proxy_secret: string; user_header: string; secret_header: string }
  /**
   * Where the data lives (SPEC §11): url empty (the default) is the SQLite file in data_dir; a postgres:// or
   * postgresql:// URL is one PostgreSQL database that several nodes may share. It may hold a password: never
   * print it, print redactDatabaseUrl(url).
   */
  database: { url: string }
  /** The web pages: the dashboard's open sign-up (off: accounts are made by an admin or the CLI). */
  web: { signup: boolean }
  /** The audit log (SPEC §7): rows older than keep_days days are deleted by an hourly sweep. */
  audit: { keep_days: number }
  /** Webhooks (SPEC §8): after a new secret, the one before stays valid (both sign) this many seconds (0: none). */
  webhooks: { rotation_overlap: number }
  /** Countries of visits (SPEC §4; src/kernel/geo.ts/): empty database: the embedded one; else a MaxMind-format .mmdb file (relative to the config file). */
  geo: { database: string }
  /** The service's log (src/kernel/log.ts): level, format (auto: pretty on a terminal, else JSON lines), request lines. */
  log: { level: 'debug' | 'info' | 'warn' | 'error'; format: 'auto' | 'json' | 'pretty'; requests: boolean }
  /**
   * Single sign-on with an OpenID provider (SPEC §7; src/oidc/). Empty issuer: off. client_secret_file, when
   * set, is read at load and its content (trimmed) put into client_secret. Changes need a restart.
   */
  oidc: {
    issuer: string
    client_id: string
    client_secret: string
    client_secret_file: string
    scopes: string
    admin_groups: string[]
    only: boolean
    /** What the sign-in button says after "Sign in with"; empty: the issuer's host. */
    name: string
  }
}

export function defaultConfig(): Config {
  return {
    data_dir: './data',
    server: {
      host: '0.0.0.0',
      port: 8080,
      base_url: 'http://localhost:8080',
      trusted_proxies: [],
      metrics_token: '',
      domains: [],
    },
    domains: {},
    links: {
      redirect_status: 302,
      blocked_domains: [],
      anonymous: true,
      blocklist_files: [],
      import_max_rows: 50_000,
      fetch_metadata: true,
    },
    rate: { anon_per_minute: 60, anon_per_day: 200, key_per_minute: 600 },
    mail: {
      domains: ['localhost'],
      smtp_host: '0.0.0.0',
      smtp_port: 2525,
      mailbox_ttl: 86400,
      max_message_bytes: 10 * 1024 * 1024,
      max_messages: 200,
      tls_cert: '',
      tls_key: '',
      max_connections_per_ip: 10,
    },
    media: {
      ytdlp_path: '',
      allow_private_networks: false,
      max_concurrent: 2,
      link_ttl: 3600,
      extract_timeout: 60,
      cache_max_bytes: 2 * 1024 * 1024 * 1024,
      playlist_max: 50,
    },
    marketplace: { proxy_secret: '', user_header: 'X-RapidAPI-User', secret_header: 'X-RapidAPI-Proxy-Secret' },
    database: { url: '' },
    web: { signup: false },
    audit: { keep_days: 365 },
    webhooks: { rotation_overlap: 86400 },
    geo: { database: '' },
    log: { level: 'info', format: 'auto', requests: true },
    oidc: {
      issuer: '',
      client_id: '',
      client_secret: '',
      client_secret_file: '',
      scopes: 'openid profile email groups',
      admin_groups: [],
      only: false,
      name: '',
    },
  }
}

const schema: Record<string, Check | Record<string, Check>> = {
  data_dir: str((v) => (v.trim() ? null : 'must not be empty')),
  server: {
    host: str((v) => (v ? null : 'must not be empty')),
    port: int(0, 65535),
    base_url: str(baseUrl),
    trusted_proxies: list(str(cidr)),
    metrics_token: bearerToken,
    domains: list(str(hostname)),
  },
  domains: domainTables,
  links: {
    redirect_status: int(301, 308, [301, 302, 307, 308]),
    blocked_domains: list(str(hostOrAddress)),
    anonymous: bool,
    blocklist_files: list(str((v) => (v.trim() ? null : 'must not be empty'))),
    import_max_rows: int(1, 1_000_000),
    fetch_metadata: bool,
  },
  rate: { anon_per_minute: int(0, 1_000_000), anon_per_day: int(0, 100_000_000), key_per_minute: int(0, 1_000_000) },
  mail: {
    domains: list(str(hostname), { nonEmpty: true }),
    smtp_host: str((v) => (v ? null : 'must not be empty')),
    smtp_port: int(0, 65535),
    mailbox_ttl: int(60, 365 * 86400),
    max_message_bytes: int(1024, 1024 * 1024 * 1024),
    max_messages: int(1, 100_000),
    tls_cert: str(),
    tls_key: str(),
    max_connections_per_ip: int(1, 10_000),
  },
  media: {
    ytdlp_path: str(),
    allow_private_networks: bool,
    max_concurrent: int(1, 64),
    link_ttl: int(60, 7 * 86400),
    extract_timeout: int(1, 3600),
    cache_max_bytes: int(16 * 1024 * 1024, 2 ** 50),
    playlist_max: int(1, 500),
  },
  marketplace: { proxy_secret: str(), user_header: str(headerName), secret_header: str(headerName) },
  database: { url: databaseUrl },
  web: { signup: bool },
  // At least a day (the sweep runs hourly); at most 100 years.
  audit: { keep_days: int(1, 36_500) },
  // Seconds, as the other durations here: at most 30 days.
  webhooks: { rotation_overlap: int(0, 30 * 86400) },
  geo: { database: str() },
  log: {
    level: str(oneOf(['debug', 'info', 'warn', 'error'])),
    format: str(oneOf(['auto', 'json', 'pretty'])),
    requests: bool,
  },
  oidc: {
    issuer: str(issuerUrl),
    client_id: str((v) => (/^[\x21-\x7e]{0,255}$/.test(v) ? null : 'must be at most 255 visible ASCII characters')),
    client_secret: secretString,
    client_secret_file: str(),
    scopes: str((v) => (v.split(/ +/).includes('openid') ? null : 'must include "openid" (space-separated scopes)')),
    admin_groups: list(str((v) => (v.trim() && v.length <= 256 ? null : 'must be a group name (1 to 256 characters)'))),
    only: bool,
    name: str((v) =>
      v.length <= 64 && !/[\u0000-\u001f\u007f]/.test(v)
        ? null
        : 'must be at most 64 characters, no control characters',
    ),
  },
}

/** Validates a parsed TOML document against the schema and merges it over the defaults. */
export function buildConfig(doc: Record<string, unknown>, relativeTo = process.cwd()): Config {
  const config = defaultConfig() as unknown as Record<string, unknown>
  for (const [key, value] of Object.entries(doc)) {
    const rule = schema[key]
    if (!rule) throw new ConfigError(`config: unknown key "${key}"`)
    if (typeof rule === 'function') {
      config[key] = rule(value, key)
      continue
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new ConfigError(`config: "${key}" must be a table ([${key}])`)
    const section = config[key] as Record<string, unknown>
    for (const [sub, subValue] of Object.entries(value)) {
      const subRule = rule[sub]
      if (!subRule) throw new ConfigError(`config: unknown key "${key}.${sub}"`)
      section[sub] = subRule(subValue, `${key}.${sub}`)
    }
  }
  const result = config as unknown as Config
  // Without a base_url of its own, the service's address follows its port (serve --port 9000 makes links on :9000).
  const server = doc.server as Record<string, unknown> | undefined
  if (server?.base_url === undefined) result.server.base_url = localBaseUrl(result.server)
  result.server.base_url = result.server.base_url.replace(/\/+$/, '')
  settleDomains(result.server, result.domains)
  result.mail.domains = result.mail.domains.map((d) => d.toLowerCase())
  // Addresses in one spelling (links/validate.ts matches them so), names in lower case.
  result.links.blocked_domains = result.links.blocked_domains.map((d) => canonicalIp(d) ?? d.toLowerCase())
  if (!isAbsolute(result.data_dir)) result.data_dir = resolve(relativeTo, result.data_dir)
  const { tls_cert, tls_key } = result.mail
  if (!tls_cert !== !tls_key)
    throw new ConfigError(
      `config: "mail.${tls_cert ? 'tls_key' : 'tls_cert'}" must be set too: STARTTLS needs both a certificate and its key`,
    )
  if (tls_cert && !isAbsolute(tls_cert)) result.mail.tls_cert = resolve(relativeTo, tls_cert)
  if (tls_key && !isAbsolute(tls_key)) result.mail.tls_key = resolve(relativeTo, tls_key)
  if (result.geo.database && !isAbsolute(result.geo.database))
    result.geo.database = resolve(relativeTo, result.geo.database)
  checkOidc(result.oidc, relativeTo)
  return result
}

/** The [oidc] keys together: what a provider needs, and the secret read from its file. */
function checkOidc(oidc: Config['oidc'], relativeTo: string) {
  // The issuer is kept as written, trailing slash included: the provider's discovery document must name
  // exactly it (Authentik's ends with a slash, Keycloak's does not).
  oidc.scopes = oidc.scopes.trim().split(/ +/).join(' ')
  if (!oidc.issuer) {
    if (oidc.only)
      throw new ConfigError('config: "oidc.only" needs "oidc.issuer": without a provider nobody could sign in')
    return
  }
  if (!oidc.client_id) throw new ConfigError('config: "oidc.client_id" must be set when "oidc.issuer" is set')
  if (oidc.client_secret && oidc.client_secret_file)
    throw new ConfigError('config: "oidc.client_secret_file" and "oidc.client_secret" are both set: use one of them')
  if (oidc.client_secret_file) {
    const path = isAbsolute(oidc.client_secret_file)
      ? oidc.client_secret_file
      : resolve(relativeTo, oidc.client_secret_file)
    oidc.client_secret_file = path
    try {
      oidc.client_secret = readFileSync(path, 'utf8').trim()
    } catch (err) {
      throw new ConfigError(
        `config: "oidc.client_secret_file" cannot be read: ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      )
    }
    if (!oidc.client_secret) throw new ConfigError(`config: "oidc.client_secret_file" ${path} is empty`)
    if (oidc.client_secret.length > 1024 || /[\u0000-\u001f\u007f]/.test(oidc.client_secret))
      throw new ConfigError(`config: "oidc.client_secret_file" ${path} must hold one line of at most 1024 characters`)
  }
  if (!oidc.client_secret)
    throw new ConfigError(
      'config: "oidc.client_secret" (or "oidc.client_secret_file") must be set when "oidc.issuer" is set',
    )
  if (!oidc.name) oidc.name = new URL(oidc.issuer).hostname
}

/**
 * The base URL of a service with no base_url set: http://localhost:PORT, or the host it listens on when that
 * is one address or name (not 0.0.0.0 or ::). Port 0 (a free port, known only once listening) keeps the default.
 */
function localBaseUrl({ host, port }: { host: string; port: number }): string {
  if (port === 0) return defaultConfig().server.base_url
  const any = host === '0.0.0.0' || host === '::' || host === '[::]'
  const name = any ? 'localhost' : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
  const url = `http://${name}:${port}`
  return URL.canParse(url) ? url : `http://localhost:${port}`
}

/** What the command line sets over the config file (serve --port, --host, --data). */
export interface ConfigOverrides {
  port?: number
  host?: string
  /** mail.smtp_port (0: no SMTP). */
  smtp_port?: number
  /** Relative to the working directory (not to the config file). */
  data_dir?: string
}

/** The overrides put into the file's document, where the same checks as the file's own values apply. */
function overridden(doc: Record<string, unknown>, o: ConfigOverrides): Record<string, unknown> {
  const server = { ...((doc.server as Record<string, unknown> | undefined) ?? {}) }
  if (o.port !== undefined) server.port = o.port
  if (o.host !== undefined) server.host = o.host
  const out: Record<string, unknown> = { ...doc }
  if (o.port !== undefined || o.host !== undefined) out.server = server
  if (o.smtp_port !== undefined)
    out.mail = { ...((doc.mail as Record<string, unknown> | undefined) ?? {}), smtp_port: o.smtp_port }
  if (o.data_dir !== undefined) out.data_dir = resolve(o.data_dir)
  return out
}

/** Loads the config file (or the defaults when there is none). A relative data_dir is relative to the file. */
export function loadConfig(path?: string, overrides: ConfigOverrides = {}): Config {
  if (!path) return buildConfig(overridden({}, overrides))
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`config: cannot read ${path}: ${(err as Error).message}`)
  }
  let doc: Record<string, unknown>
  try {
    doc = Bun.TOML.parse(text) as Record<string, unknown>
  } catch (err) {
    throw new ConfigError(`config: ${path} is not valid TOML: ${(err as Error).message}`)
  }
  return buildConfig(overridden(doc, overrides), resolve(path, '..'))
}
