// The path of a request, read from its URL text without the URL parser. Bun hands a request with a
// malformed Host header (`a b`, `x@y`, `localhost:99999`) a URL that `new URL` refuses — sometimes just
// "/path" — and an error handler that throws on it answered with the runtime's own stack-trace page.
export function pathOf(url: string): string {
  let start = 0
  if (url.charCodeAt(0) !== 47 /* / */) {
    const scheme = url.indexOf('://')
    start = scheme < 0 ? url.length : url.indexOf('/', scheme + 3)
    if (start < 0) return '/'
  }
  let end = url.length
  const q = url.indexOf('?', start)
  if (q >= 0) end = q
  const h = url.indexOf('#', start)
  if (h >= 0 && h < end) end = h
  return start >= end ? '/' : url.slice(start, end)
}
