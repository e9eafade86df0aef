// What a visit's request says beyond its headers' values: the code of its path, whether a browser navigates
// to it, and the password header decoded.

/**
 * A top-level navigation of a real browser. Browsers send Sec-Fetch-* headers, but only to secure
 * origins (https, localhost): on a plain-http home server (http://nas:8080) a browser is known by the
 * HTML it accepts instead. Scripts (curl, fetch, requests) accept anything and send no Sec-Fetch-Mode.
 */
export function isBrowserNavigation(request: Request): boolean {
  const mode = request.headers.get('sec-fetch-mode')
  if (mode !== null) return mode === 'navigate' || request.headers.get('sec-fetch-dest') === 'document'
  return /\btext\/html\b/i.test(request.headers.get('accept') ?? '')
}

/**
 * X-Link-Password as sent: header values are bytes, not UTF-8 text, so a password that is not ASCII is
 * sent percent-encoded (its UTF-8 bytes; a literal "%" as %25). A value without any %XX is taken as is;
 * null when it has %XX but does not decode to UTF-8 text.
 */
export function decodePasswordHeader(value: string): string | null {
  if (!/%[0-9A-Fa-f]{2}/.test(value)) return value
  try {
    return decodeURIComponent(value)
  } catch {
    return null
  }
}

/**
 * The code of a path /<code> made of the characters of codes and aliases (letters, digits, _ and -) (the
 * path as pathOf reads it from the URL); else null. A reserved name (/healthz, /login) passes here, but no
 * link has one.
 */
export function codeOf(path: string): string | null {
  if (path.length < 2 || path.length > 65) return null
  for (let i = 1; i < path.length; i++) {
    const c = path.charCodeAt(i)
    // 0-9, A-Z, a-z, _ and -
    if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45)) return null
  }
  return path.slice(1)
}
