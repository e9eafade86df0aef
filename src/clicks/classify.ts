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

export function createClassifier(capacity = 2000) {
  const cache = new Map<string, Classified>()
  return (ua: string): Classified => {
    const hit = cache.get(ua)
    if (hit) return hit
    const c = classifyUserAgent(ua.slice(0, 1024))
    if (cache.size >= capacity) cache.delete(cache.keys().next().value!)
    cache.set(ua, c)
    return c
  }
}
