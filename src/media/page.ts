// A page before yt-dlp reads it and what it answers: the URL normalised and checked by the SSRF guard, every
// address of the answer screened, and the page's picture (fetched under the guard) when yt-dlp finds no media.
import { AppError, badRequest } from '../kernel/errors'
import { checkUrl, GuardError, guardedFetch, type GuardOptions } from '../kernel/net/guard'
import { privateAddress } from '../kernel/net/private-address'
import { extractionTimeout, upstreamFailed, type Extraction } from './extract'
import { findPhoto, PAGE_LIMIT, photoExtraction } from './photo'

/** What the guard is told for every request of media download. */
export type MediaGuard = Pick<GuardOptions, 'allowPrivate' | 'resolve' | 'isAllowed'>

/**
 * What only an attempt on the guard puts into yt-dlp's answer: a smuggled-data fragment (yt-dlp's way of
 * passing options between its extractors, which a page could forge) or a header that tells yt-dlp which proxy
 * to use. A safe yt-dlp never applies them; whatever version runs, an answer carrying them is not used.
 */
export const GUARD_BYPASS = /__youtubedl_smuggle|ytdl-[a-z-]*proxy/i

/** The URL as yt-dlp gets it: parsed and re-serialised, so what follows `--` is one well-formed URL. */
export function normalize(input: string): string {
  if (/[\s\u0000-\u001f\u007f]/.test(input))
    throw badRequest(
      'invalid_url',
      'The parameter "url" must not contain spaces or control characters (percent-encode them).',
    )
  let url: URL
  try {
    url = new URL(input)
  } catch {
    throw badRequest('invalid_url', 'The parameter "url" must be an absolute URL with the scheme http or https.')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw badRequest('invalid_url', 'The parameter "url" must be an absolute URL with the scheme http or https.')
  if (url.username || url.password)
    throw badRequest('invalid_url', 'The parameter "url" must not contain a user name or password.')
  if (GUARD_BYPASS.test(input)) throw privateAddress()
  url.hash = ''
  return url.href
}

export async function guardCheck(url: string, guard: MediaGuard) {
  try {
    await checkUrl(url, { ...guard, timeoutMs: 10_000 })
  } catch (err) {
    if (err instanceof GuardError) {
      if (err.reason === 'private') throw privateAddress()
      if (err.reason === 'timeout') throw extractionTimeout(10)
      throw upstreamFailed(err.message)
    }
    throw err
  }
}

/** The page's picture when yt-dlp finds no media: fetched under the guard, its first MiB read. */
export async function photoOf(url: string, guard: MediaGuard): Promise<Extraction | null> {
  let answer
  try {
    answer = await guardedFetch(url, {
      ...guard,
      method: 'GET',
      timeoutMs: 15_000,
      headers: { accept: 'text/html,image/*;q=0.9,*/*;q=0.5' },
    })
  } catch (err) {
    if (err instanceof GuardError && err.reason === 'private') throw privateAddress()
    return null
  }
  const { response } = answer
  const type = (response.headers.get('content-type') ?? '').toLowerCase()
  if (!response.ok) {
    void response.body?.cancel().catch(() => {})
    return null
  }
  if (type.startsWith('image/')) {
    void response.body?.cancel().catch(() => {})
    return photoExtraction({ url: answer.url, title: '', width: null, height: null }, url, type)
  }
  if (!type.includes('html') || !response.body) {
    void response.body?.cancel().catch(() => {})
    return null
  }
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = response.body.getReader()
  try {
    while (size < PAGE_LIMIT) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      size += value.byteLength
    }
  } finally {
    void reader.cancel().catch(() => {})
  }
  const photo = findPhoto(Buffer.concat(chunks).toString('utf8'), answer.url)
  return photo ? photoExtraction(photo, url) : null
}

/** The guard's verdict on each address yt-dlp reported, asked once per host: false for a refused one. */
export function guardVerdicts(guard: MediaGuard): (raw: string) => Promise<boolean> {
  const verdicts = new Map<string, Promise<boolean>>()
  return (raw: string) => {
    if (GUARD_BYPASS.test(raw)) return Promise.resolve(false)
    let host: string
    try {
      host = new URL(raw).host
    } catch {
      return Promise.resolve(false)
    }
    let verdict = verdicts.get(host)
    if (!verdict) {
      verdict = checkUrl(raw, { ...guard, timeoutMs: 10_000 }).then(
        () => true,
        // Only a refusal drops it: a name that does not resolve now is tried again, under the guard, at download.
        (err) => !(err instanceof GuardError && (err.reason === 'private' || err.reason === 'scheme')),
      )
      verdicts.set(host, verdict)
    }
    return verdict
  }
}

/**
 * Every address yt-dlp reported, checked by the guard before any of it is handed out or fetched: a format on a
 * private host is dropped (all of them: the page is refused), a thumbnail on one is left out. The
 * download itself is checked again (guardedFetch, or the proxy for yt-dlp's own fetches).
 */
export async function screen<E extends Extraction>(
  extraction: E,
  guard: MediaGuard,
  allowed = guardVerdicts(guard),
): Promise<E> {
  const kept = await Promise.all(extraction.formats.map((f) => allowed(f.upstreamUrl)))
  const formats = extraction.formats.filter((_, i) => kept[i])
  if (formats.length === 0) throw privateAddress()
  const thumbnail = extraction.thumbnail && (await allowed(extraction.thumbnail)) ? extraction.thumbnail : null
  return { ...extraction, formats, thumbnail }
}

/** A guarded fetch of a file that failed, as its answer: a private address or a timeout said so, else upstream_failed. */
export function fileFetchFailure(err: unknown): unknown {
  if (!(err instanceof GuardError)) return err
  if (err.reason === 'private')
    return new AppError(502, 'upstream_failed', 'The file leads to a private or local network address.')
  if (err.reason === 'timeout') return new AppError(504, 'timeout', "The file's server did not answer in time.")
  return upstreamFailed(err.message)
}
