// User agent → bot / device / browser / os (isbot, ua-parser-js 1.x) behind a small cache, at flush time; and the
// names statistics are kept under: referrer hosts, and the reserved name for "the rest".
import { isbot } from 'isbot'
import UAParser from 'ua-parser-js'

export interface Classified {
  bot: boolean
  device: 'desktop' | 'mobile' | 'tablet' | 'other'
  browser: string
  os: string
}

/**
 * Statistics keep at most MAX_NAMES names per link, day and dimension, and answers at most MAX_NAMES per
 * dimension; the clicks of every other name are summed under OTHER. The rule that keeps it unambiguous:
 * no real name is ever exactly "other". Referrer hosts are the only names a visitor chooses, and a host
 * spelled "other" (a single-label intranet name) is kept as "other." — the absolute DNS spelling of the
 * same host. Browser and system names come from ua-parser-js, capitalised ("Other" when it has none).
 * The one device category "other" (not desktop, mobile or tablet) means what OTHER means, and with four
 * categories there is never a rest to merge it with.
 */
export const OTHER = 'other'
export const MAX_NAMES = 50

/**
 * Fetchers isbot (5.x) takes for people, each of which would count a click and use a visit up: Discourse's
 * link previews in their "compatible" spelling, and Microsoft Office, which fetches a link clicked in Word
 * or Outlook (`ms-office`, "Microsoft Office Existence/Protocol Discovery") before it opens the browser
 * that then visits it for real. The link previews of Slack, Discord, Mastodon, WhatsApp, Facebook, X,
 * Telegram, iMessage, LinkedIn, Skype and Google are isbot's own (test/unit/clicks-bots.test.ts checks each).
 */
const EXTRA_BOTS = /discourse forum onebox|\bms-office\b|microsoft office (?:existence|protocol) discovery/i

const DESKTOP_OS =
  /^(windows|mac os|macos|linux|ubuntu|debian|fedora|chromium os|chrome os|freebsd|openbsd|netbsd|solaris|mint|arch|gentoo|suse|red hat|centos|manjaro)/i

export function classifyUserAgent(ua: string): Classified {
  if (!ua) return { bot: false, device: 'other', browser: 'Unknown', os: 'Unknown' }
  const bot = isbot(ua) || EXTRA_BOTS.test(ua)
  const r = new UAParser(ua).getResult()
  let device: Classified['device']
  if (r.device.type === 'mobile') device = 'mobile'
  else if (r.device.type === 'tablet') device = 'tablet'
  else if (r.device.type)
    device = 'other' // smarttv, console, wearable, embedded, xr
  else if (r.os.name && DESKTOP_OS.test(r.os.name)) device = 'desktop'
  else device = 'other'
  return { bot, device, browser: r.browser.name || 'Other', os: r.os.name || 'Other' }
}

/** The referrer's host, without "www.", or "direct" when there is none (or it is not http/https). */
export function sourceOf(referer: string): string {
  if (!referer) return 'direct'
  try {
    const u = new URL(referer)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'direct'
    const host = u.hostname.toLowerCase().replace(/^www\./, '') || 'direct'
    return host === OTHER ? `${OTHER}.` : host
  } catch {
    return 'direct'
  }
}

/** A bounded memo: the oldest entry goes when it is full (real traffic repeats user agents and referrers). */
function memo<T>(fn: (key: string) => T, capacity: number): (key: string) => T {
  const cache = new Map<string, T>()
  return (key) => {
    const hit = cache.get(key)
    if (hit !== undefined) return hit
    const value = fn(key)
    if (cache.size >= capacity) cache.delete(cache.keys().next().value!)
    cache.set(key, value)
    return value
  }
}

const UNCLASSIFIED: Classified = Object.freeze({ bot: false, device: 'other', browser: 'Unknown', os: 'Unknown' })

/**
 * Classification behind a bounded cache, with bounded work. ua-parser-js runs a long list of regular
 * expressions (~75 µs for a 256-character user agent), so a flood of distinct user agents stalled every
 * flush (redirects fell from 38k to 6.5k req/s). At most `newPerSecond` user agents that are not in the
 * cache are parsed per second of click time (`at`, the click's own time); past that, a click counts as
 * a human's with an unknown browser and system. Real browsers and the well-known bots repeat their user
 * agents, so they are answered from the cache and never wait for the allowance.
 */
export function createClassifier(opts: { capacity?: number; newPerSecond?: number } = {}) {
  const capacity = opts.capacity ?? 2000
  const newPerSecond = opts.newPerSecond ?? 200
  const cache = new Map<string, Classified>()
  let second = -Infinity
  let parsed = 0
  // The last user agent answered: a busy client repeats it, and comparing costs less than hashing it anew
  // (each request's header is a new string).
  let lastUa: string | null = null
  let last = UNCLASSIFIED
  return (ua: string, at: number): Classified => {
    if (ua === lastUa) return last
    const hit = cache.get(ua)
    if (hit !== undefined) {
      lastUa = ua
      last = hit
      return hit
    }
    const s = Math.floor(at / 1000)
    if (s > second) {
      second = s
      parsed = 0
    }
    if (parsed >= newPerSecond) return UNCLASSIFIED
    parsed++
    const value = classifyUserAgent(ua)
    if (cache.size >= capacity) cache.delete(cache.keys().next().value!)
    cache.set(ua, value)
    return value
  }
}
export const createSourceCache = (capacity = 2000) => memo(sourceOf, capacity)
