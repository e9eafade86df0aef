// Small helpers of every dashboard page: cookies, the safe target of a sign-in, paths, time as people read it.
import { utcText } from '../web/render'

export function cookiesOf(request: Request): Map<string, string> {
  const out = new Map<string, string>()
  const header = request.headers.get('cookie')
  if (!header || header.length > 8192) return out
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    const name = part.slice(0, eq).trim()
    if (!out.has(name)) out.set(name, part.slice(eq + 1).trim())
  }
  return out
}

/**
 * Where to go after signing in: a dashboard path only (never another site, never "//host" or "/\host"), in
 * printable ASCII (it goes into a Location header). Checked where `next` is made and where it is followed.
 */
export function safeNext(next: string | null): string {
  if (!next || next.length > 500) return '/dashboard'
  if (!/^\/dashboard(?:[/?#]|$)/.test(next)) return '/dashboard'
  if (/[^\x21-\x7e]|\\/.test(next)) return '/dashboard'
  return next
}

/** The origin of a URL, or null when it does not parse. */
export function originOf(url: string): string | null {
  try {
    return new URL(url).origin
  } catch {
    return null
  }
}

/** A path of this site with one more query parameter. */
export function withParam(path: string, name: string, value: string): string {
  return `${path}${path.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(value)}`
}

/** Time as people read it in a table: "2026-11-23 14:05 UTC" (or "never" for null). */
export function when(ms: number | null | undefined): string {
  return utcText(ms)
}
