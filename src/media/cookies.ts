// Cookies per site (issue 41): an admin's cookies file for a domain or an IP address, sealed in the database with
// a key derived from the signing secret, opened only to fetch a URL of that site — for yt-dlp as a private file
// removed after the run, for our own fetches as a Cookie header. Never shown again, never answered by any API.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import {
  CookiesError,
  cookieHeader,
  earliestExpiry,
  formatCookies,
  normalizeSite,
  parseCookies,
  siteCandidates,
  type Cookie,
} from './cookies-file'
import { auditRow, type AuditEntry, type AuditRows, type Who } from '../audit'
import type { CookieSiteRow, CookieStorage } from './storage/cookies-contract'

const IV_BYTES = 12
const TAG_BYTES = 16
const VERSION = 1
/** A run's folder older than this was left by a crash (a run lasts an hour at most: delivery.ts). */
const LEFT_BEHIND_MS = 2 * 3600_000

/** The key that seals cookies: HKDF of the data directory's signing secret, for this use only. */
export const cookieKey = (secret: Buffer) =>
  Buffer.from(hkdfSync('sha256', secret, 'linkbox media cookies', 'linkbox media cookies v1', 32))

// The site is the associated data: a row moved to another site does not open.
const aad = (site: string) => Buffer.from(`media_cookies\u0000${site}`)

export function seal(key: Buffer, site: string, cookies: Cookie[]): Uint8Array {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(aad(site))
  const body = Buffer.concat([cipher.update(JSON.stringify(cookies), 'utf8'), cipher.final()])
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body])
}

/** The cookies, or null when the bytes do not open under this key and site (another secret, a moved or changed row). */
export function unseal(key: Buffer, site: string, sealed: Uint8Array): Cookie[] | null {
  const b = Buffer.from(sealed)
  if (b[0] !== VERSION || b.length < 1 + IV_BYTES + TAG_BYTES) return null
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, b.subarray(1, 1 + IV_BYTES))
    decipher.setAAD(aad(site))
    decipher.setAuthTag(b.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES))
    const json = Buffer.concat([decipher.update(b.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()])
    return JSON.parse(json.toString('utf8')) as Cookie[]
  } catch {
    return null
  }
}

/** yt-dlp's arguments for a run with a site's cookies, and what removes their file after it. */
export interface CookieRun {
  args: string[]
  remove: () => void
}
export const NO_COOKIES: CookieRun = { args: [], remove: () => {} }

/** What an added file gave: the site's spelling, the cookies kept and those left out. */
export interface AddedCookies {
  site: string
  cookies: number
  otherSites: number
  expired: number
  expires: number | null
}

export interface CookieJarDeps<Tx> {
  storage: CookieStorage<Tx>
  /** cookieKey(the signing secret). */
  key: Buffer
  clock: () => number
  /** data_dir: the private files for yt-dlp go under it. */
  dataDir: string
  /** Where an add or a removal is recorded (who did it: the CLI or an admin). */
  audit: Pick<AuditRows<Tx>, 'insert'>
}

export function createCookieJar<Tx>({ storage, key, clock, dataDir, audit }: CookieJarDeps<Tx>) {
  // The audit row of a change, written in the change's transaction.
  const record = (by: Who, entry: AuditEntry) => (tx: Tx) => audit.insert(tx, auditRow(by, entry, clock()))
  const runDir = join(dataDir, 'media', 'cookies')

  async function add(siteInput: string, text: string, by: Who): Promise<AddedCookies> {
    const site = normalizeSite(siteInput)
    const parsed = parseCookies(text, site, clock())
    if (parsed.cookies.length === 0)
      throw new CookiesError(
        `the cookies file holds no cookie for ${site} (${parsed.otherSites} for other domains, ${parsed.expired} expired)`,
      )
    const expires = earliestExpiry(parsed.cookies)
    const kept = `${parsed.cookies.length} cookies kept, ${parsed.otherSites} for other domains and ${parsed.expired} expired left out`
    const ok = await storage.put(
      { site, sealed: seal(key, site, parsed.cookies), cookies: parsed.cookies.length, expires, created: clock() },
      record(by, { action: 'cookies.add', target: `site ${site}`, detail: kept }),
    )
    if (!ok) throw new CookiesError('too many sites have cookies already: remove one first')
    return { site, cookies: parsed.cookies.length, otherSites: parsed.otherSites, expired: parsed.expired, expires }
  }

  /** The cookies of the site `url` belongs to (its longest stored site), noted as used; null when none. */
  async function forUrl(url: string): Promise<{ site: string; cookies: Cookie[] } | null> {
    let host: string
    try {
      host = new URL(url).hostname
    } catch {
      return null
    }
    const row = await storage.find(siteCandidates(host))
    if (!row) return null
    const cookies = unseal(key, row.site, row.sealed)
    if (!cookies) return null
    // Last use is a note: a database that cannot be written now does not stop the download.
    await storage.touch(row.site, clock()).catch(() => {})
    return { site: row.site, cookies }
  }

  return {
    add,
    list: (): Promise<CookieSiteRow[]> => storage.list(),
    /** Whether the site had cookies (now removed). */
    async remove(siteInput: string, by: Who): Promise<boolean> {
      const site = normalizeSite(siteInput)
      return storage.remove(site, record(by, { action: 'cookies.remove', target: `site ${site}` }))
    },
    forUrl,
    /** The Cookie header for a fetch of `url` of ours (the site's cookies that match it), or null. */
    async header(url: string): Promise<string | null> {
      const found = await forUrl(url)
      return found ? cookieHeader(found.cookies, new URL(url), clock()) : null
    },
    /**
     * yt-dlp's arguments for the cookies of `url`'s site — `--cookies FILE`, a copy of ours alone (0600 in a fresh
     * 0700 folder under data_dir) — and what removes it, which the caller runs when the run ends, whatever the
     * outcome (a time limit too). No cookies: no arguments.
     */
    async forRun(url: string): Promise<CookieRun> {
      const found = await forUrl(url)
      if (!found) return NO_COOKIES
      mkdirSync(runDir, { recursive: true, mode: 0o700 })
      const dir = mkdtempSync(join(runDir, 'run-'))
      const remove = () => rmSync(dir, { recursive: true, force: true })
      try {
        const path = join(dir, 'cookies.txt')
        const fd = openSync(path, 'wx', 0o600)
        try {
          writeSync(fd, formatCookies(found.cookies))
        } finally {
          closeSync(fd)
        }
        return { args: ['--cookies', path], remove }
      } catch (err) {
        remove()
        throw err
      }
    },
    /** At start: files a crash left behind (older than any run may last: another process, `linkbox import`, may be running one). */
    sweepFiles() {
      let names: string[] = []
      try {
        names = readdirSync(runDir)
      } catch {}
      for (const name of names) {
        const path = join(runDir, name)
        try {
          if (clock() - statSync(path).mtimeMs > LEFT_BEHIND_MS) rmSync(path, { recursive: true, force: true })
        } catch {}
      }
    },
    runDir,
  }
}
export type CookieJar = ReturnType<typeof createCookieJar<unknown>>
export { CookiesError } from './cookies-file'
