// What a destination's page says of itself, for a link's title and its preview's defaults (links.fetch_metadata):
// the <title>, og:title/og:description (twitter: ones as a fallback), cleaned. Pure; metadata-fetch.ts reads the page.
import he from 'he'
import type { PageMeta } from './storage/contract'

/** SPEC §2a: a title and og_title hold at most 200 characters, og_description 500. */
export const TITLE_MAX = 200
export const DESCRIPTION_MAX = 500

// C0 and C1 controls and DEL (whitespace among them becomes a space first); a lone surrogate is no character.
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** Entities decoded, whitespace collapsed, controls dropped, trimmed, cut to `max` characters (code points). */
export function cleanText(raw: string, max: number): string {
  const text = he.decode(raw).replace(/\s+/g, ' ').replace(CONTROLS, '').trim()
  if (text.length <= max) return text
  const points = [...text]
  return points.length <= max ? text : points.slice(0, max).join('').trimEnd()
}

// What holds no title of the page: comments, scripts, styles, templates and inline SVG (whose <title> is a
// tooltip). Each is removed before the page's tags are looked for; one not closed (a cut page) runs to the end.
const HIDDEN = /<!--[\s\S]*?(?:-->|$)|<(script|style|template|svg|noscript)\b[^>]*>[\s\S]*?(?:<\/\1\s*>|$)/gi
const TITLE = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i
const META = /<meta\b[^>]*>/gi
const ATTR = /([^\s"'<>/=]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g

/** A tag's attributes by lower-case name (the first of each), values as written (entities still in). */
function attributes(tag: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const m of tag.slice(5).matchAll(ATTR)) {
    const name = m[1]!.toLowerCase()
    if (!out.has(name)) out.set(name, m[2] ?? m[3] ?? m[4] ?? '')
  }
  return out
}

/**
 * The page's title (its <title>, else og:title, else twitter:title) and its preview defaults (og:title and
 * og:description, else the twitter: ones), each cleaned; '' for what it does not have. A <title> not closed in
 * `html` (a page cut at the read bound) is not taken.
 */
export function pageMeta(html: string): PageMeta {
  const visible = html.replace(HIDDEN, ' ')
  const meta = new Map<string, string>()
  for (const m of visible.matchAll(META)) {
    const a = attributes(m[0])
    const key = (a.get('property') ?? a.get('name') ?? '').toLowerCase().trim()
    const content = a.get('content')
    if (content === undefined || meta.has(key)) continue
    if (/^(og|twitter):(title|description)$/.test(key)) meta.set(key, content)
  }
  const pick = (keys: string[], max: number) => {
    for (const key of keys) {
      const value = cleanText(meta.get(key) ?? '', max)
      if (value) return value
    }
    return ''
  }
  const og_title = pick(['og:title', 'twitter:title'], TITLE_MAX)
  const og_description = pick(['og:description', 'twitter:description'], DESCRIPTION_MAX)
  const tagged = TITLE.exec(visible)?.[1]
  const title = (tagged !== undefined ? cleanText(tagged, TITLE_MAX) : '') || og_title
  return { title, og_title, og_description }
}

/** The charset a Content-Type header names, lower case, or null. */
export function headerCharset(contentType: string): string | null {
  const m = /;\s*charset\s*=\s*(?:"([^"]*)"|([^\s;]+))/i.exec(contentType)
  return (m?.[1] ?? m?.[2] ?? '').trim().toLowerCase() || null
}

/**
 * How to decode a page's bytes: a byte-order mark, else the header's charset, else a <meta charset> or
 * http-equiv Content-Type in the first 1024 bytes, else UTF-8 (an unknown label is UTF-8 too). A page that calls
 * itself UTF-16 in a meta is read as UTF-8 (HTML's rule: the meta could not have been read otherwise).
 */
export function pageDecoder(bytes: Uint8Array, contentType: string): TextDecoder {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return new TextDecoder('utf-8')
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be')
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le')
  const decoder = (label: string | null | undefined, fromMeta: boolean) => {
    if (!label) return null
    try {
      const d = new TextDecoder(label)
      return fromMeta && d.encoding.startsWith('utf-16') ? new TextDecoder('utf-8') : d
    } catch {
      return null
    }
  }
  const fromHeader = decoder(headerCharset(contentType), false)
  if (fromHeader) return fromHeader
  const head = new TextDecoder('windows-1252').decode(bytes.subarray(0, 1024))
  for (const m of head.matchAll(META)) {
    const a = attributes(m[0])
    const label =
      a.get('charset') ??
      ((a.get('http-equiv') ?? '').toLowerCase() === 'content-type'
        ? headerCharset(`;${a.get('content') ?? ''}`)
        : null)
    const found = decoder(label?.trim(), true)
    if (found) return found
  }
  return new TextDecoder('utf-8')
}
