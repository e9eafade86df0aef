// database.url (SPEC §11): what a usable PostgreSQL URL is, its config check, and how it is shown with the
// password hidden. Nothing here repeats a URL that may hold a password.
import { type Check, fail } from './config-checks'
import { ConfigError } from './errors'

const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full']

/** Why a database URL is not one linkbox can use, or null. Never repeats the URL (it may hold a password). */
export function databaseUrlProblem(v: string): string | null {
  let u: URL
  try {
    u = new URL(v)
  } catch {
    return 'must be a URL: postgres://user:password@host:port/database (a password with : / @ ? # in it must be percent-encoded)'
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:')
    return 'must start with postgres:// or postgresql:// (empty means SQLite in data_dir)'
  if (!u.hostname) return 'must name a host: postgres://user:password@host:port/database'
  const name = u.pathname.replace(/^\//, '')
  if (!name || name.includes('/'))
    return 'must name one database after the host: postgres://user:password@host:port/database'
  if (u.hash) return 'must not have a #fragment'
  for (const [key, value] of u.searchParams) {
    if (key !== 'sslmode') return `takes no query parameter but sslmode (got "${key.slice(0, 40)}")`
    if (!SSL_MODES.includes(value)) return `sslmode must be one of ${SSL_MODES.join(', ')}`
  }
  return null
}

/**
 * database.url: empty (SQLite), or a postgres:// URL with a host and a database (and ?sslmode= at most).
 * The message names the key and what is wrong, never the value: in a URL that is wrong, what would be the
 * password may sit anywhere (postgres://user:1234/x@host/db parses as port 1234 and a path).
 */
export const databaseUrl: Check = (v, key) => {
  if (typeof v !== 'string') return fail(key, 'must be a string', typeof v)
  if (v === '') return v
  const problem = databaseUrlProblem(v)
  if (problem) throw new ConfigError(`config: "${key}" ${problem} (the value is not shown: it may hold a password)`)
  return v
}

/**
 * A database URL as logs, doctor and messages show it: the password replaced by *** (postgres://user:***@host:port/db).
 * Null when it does not parse as a URL (then nothing of it is shown).
 */
export function redactDatabaseUrl(url: string): string | null {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return null
  }
  if (u.password) u.password = '***'
  // A valid database.url has no other query parameter and no fragment; were there one, it is not shown either.
  for (const key of new Set(u.searchParams.keys())) if (key !== 'sslmode') u.searchParams.set(key, '***')
  u.hash = ''
  return u.href
}
