// User agent → bot / device / browser / os, with maintained libraries (isbot, ua-parser-js 1.x, MIT).
// Runs at flush time, off the request path, behind a small cache: real traffic repeats user agents.
import { isbot } from 'isbot'
import UAParser from 'ua-parser-js'

export interface Classified {
  bot: boolean
  device: 'desktop' | 'mobile' | 'tablet' | 'other'
  browser: string
  os: string
}

const DESKTOP_OS = /^(windows|mac os|macos|linux|ubuntu|debian|fedora|chromium os|chrome os|freebsd|openbsd|netbsd|solaris|mint|arch|gentoo|suse|red hat|centos|manjaro)/i

export function classifyUserAgent(ua: string): Classified {
  if (!ua) return { bot: false, device: 'other', browser: 'Unknown', os: 'Unknown' }
  const bot = isbot(ua)
  const r = new UAParser(ua).getResult()
  let device: Classified['device']
  if (r.device.type === 'mobile') device = 'mobile'
  else if (r.device.type === 'tablet') device = 'tablet'
  else if (r.device.type) device = 'other' // smarttv, console, wearable, embedded, xr
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
    return u.hostname.toLowerCase().replace(/^www\./, '') || 'direct'
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

export const createClassifier = (capacity = 2000) => memo(classifyUserAgent, capacity)
export const createSourceCache = (capacity = 2000) => memo(sourceOf, capacity)
