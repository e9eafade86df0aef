// The same-site rule every form POST of the pages passes (the home page's shorten form, every dashboard
// form, the sign-in form): a post another site made the visitor's browser send is refused.

/** The origin of a URL, or null when it does not parse (a malformed Host makes request.url unparseable). */
function originOf(url: string): string | null {
  try {
    return new URL(url).origin
  } catch {
    return null
  }
}

/**
 * A POST another site made the visitor's browser send. A request without Origin is not a browser's form
 * post from elsewhere (browsers send Origin on every POST), and a script could call the API anyway.
 * Sec-Fetch-Site is believed when present (browsers send it on secure origins). `Origin: null` (a sandboxed
 * or privacy-stripped sender) matches neither origin, so it is refused.
 */
export function isCrossSite(request: Request, baseUrl: string): boolean {
  if (request.headers.get('sec-fetch-site') === 'cross-site') return true
  const origin = request.headers.get('origin')
  if (origin === null) return false
  return origin !== originOf(request.url) && origin !== originOf(baseUrl)
}
