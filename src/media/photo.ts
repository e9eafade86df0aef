// Photos: a page yt-dlp cannot read but that names its picture for link previews (og:image, twitter:image) gives
// that picture, and an image URL gives itself. Pure parsing; the page is fetched by page.ts under the guard.
import he from 'he'
import { contentTypeOf, oneLine, type Extraction } from './extract'

export interface FoundPhoto {
  url: string
  title: string
  width: number | null
  height: number | null
}

/** Read at most this much of a page: the head, where the meta tags are, comes first. */
export const PAGE_LIMIT = 1024 * 1024

const META = /<meta\b[^>]*>/gi
const ATTR = /([a-zA-Z_:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g
// In order of preference: the https form, then the plain one, then Twitter's.
const IMAGE_KEYS = ['og:image:secure_url', 'og:image', 'og:image:url', 'twitter:image', 'twitter:image:src']

function attributes(tag: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const m of tag.matchAll(ATTR)) {
    const name = m[1]!.toLowerCase()
    if (!out.has(name)) out.set(name, he.decode(m[2] ?? m[3] ?? m[4] ?? ''))
  }
  return out
}

const wholeNumber = (s: string | undefined) => (s && /^[0-9]{1,6}$/.test(s.trim()) ? Number(s.trim()) : null)

/** The page's picture (resolved against `pageUrl`, http(s) only) and its title, or null. */
export function findPhoto(html: string, pageUrl: string): FoundPhoto | null {
  const meta = new Map<string, string>()
  for (const m of html.slice(0, PAGE_LIMIT).matchAll(META)) {
    const a = attributes(m[0])
    const key = (a.get('property') ?? a.get('name') ?? '').toLowerCase().trim()
    const content = a.get('content')
    if (key && content !== undefined && !meta.has(key)) meta.set(key, content.trim())
  }
  for (const key of IMAGE_KEYS) {
    const value = meta.get(key)
    if (!value) continue
    let url: URL
    try {
      url = new URL(value, pageUrl)
    } catch {
      continue
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') continue
    const titleTag = /<title\b[^>]*>([\s\S]{0,2000}?)<\/title>/i.exec(html)?.[1]
    const title = oneLine(meta.get('og:title') ?? meta.get('twitter:title') ?? (titleTag ? he.decode(titleTag) : ''))
    return {
      url: url.href,
      title: title.slice(0, 300),
      width: key.startsWith('og:') ? wholeNumber(meta.get('og:image:width')) : null,
      height: key.startsWith('og:') ? wholeNumber(meta.get('og:image:height')) : null,
    }
  }
  return null
}

/** The extension of a picture's URL, else jpg (what most are); the content type follows it. */
export function photoExt(url: string, contentType?: string | null): string {
  const fromType = /^image\/(jpeg|png|webp|gif|avif)/i.exec(contentType ?? '')?.[1]?.toLowerCase()
  if (fromType) return fromType === 'jpeg' ? 'jpg' : fromType
  const fromPath = /\.(jpe?g|png|webp|gif|avif)$/i.exec(new URL(url).pathname)?.[1]?.toLowerCase()
  return fromPath === 'jpeg' ? 'jpg' : (fromPath ?? 'jpg')
}

function lastSegment(url: string): string {
  const segment = new URL(url).pathname.split('/').pop() ?? ''
  try {
    return oneLine(decodeURIComponent(segment)).slice(0, 200)
  } catch {
    return segment.slice(0, 200)
  }
}

/** download.json's fields for one picture. */
export function photoExtraction(photo: FoundPhoto, pageUrl: string, contentType?: string | null): Extraction {
  const ext = photoExt(photo.url, contentType)
  const title = photo.title || lastSegment(photo.url).replace(/\.[a-z0-9]+$/i, '') || 'photo'
  return {
    source: pageUrl,
    title,
    kind: 'photo',
    extractor: 'og:image',
    duration: null,
    thumbnail: photo.url,
    formats: [
      {
        id: 'photo',
        ext,
        kind: 'photo',
        width: photo.width,
        height: photo.height,
        fps: null,
        vcodec: null,
        acodec: null,
        filesize: null,
        note: 'photo',
        method: 'direct',
        upstreamUrl: photo.url,
        headers: { referer: pageUrl },
        contentType: contentTypeOf(ext),
      },
    ],
  }
}
