// Public QR images of short links (/qr/<code>.png and .svg): the short URL only, rendered once, kept in memory and
// under data_dir/cache/qr, served immutable; a deleted link's images go with it (ARCHITECTURE, qr).
import { createHash, randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import type { Config } from '../kernel/config'
import type { Events } from '../kernel/events'
import type { LinkService } from '../links'
import { notFoundPage } from '../web/error-pages'
import { PUBLIC_LANE } from './renderer'
import { QR_FORMATS, QR_MIME, type QrFormat, type QrInput, type QrService } from './service'
import type { Logger } from '../kernel/log'

const FILE_NAME = /^([A-Za-z0-9_-]{1,64})\.(png|svg)$/
const MEMORY_ENTRIES = 512
const IMMUTABLE = 'public, max-age=31536000, immutable'

interface CachedImage {
  body: Uint8Array<ArrayBuffer>
  mime: string
  etag: string
}

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data)
const etagOf = (body: Uint8Array) => `"${sha256(body).digest('base64url')}"`

/** A Map keeps insertion order: re-inserting on a hit makes the first key the least recently used. */
function createLru<V>(capacity: number) {
  const entries = new Map<string, V>()
  return {
    get(key: string): V | undefined {
      const v = entries.get(key)
      if (v !== undefined) {
        entries.delete(key)
        entries.set(key, v)
      }
      return v
    },
    delete(key: string) {
      entries.delete(key)
    },
    set(key: string, v: V) {
      entries.delete(key)
      entries.set(key, v)
      if (entries.size > capacity) entries.delete(entries.keys().next().value!)
    },
  }
}

/** RFC 9110: If-None-Match compares weakly, so W/"x" matches "x"; "*" matches any current image. */
function matchesIfNoneMatch(header: string | null, etag: string): boolean {
  if (header === null) return false
  return header.split(',').some((t) => {
    const tag = t.trim()
    return tag === '*' || tag.replace(/^W\//, '') === etag
  })
}

export function createQrRoutes(deps: {
  config: Config
  links: LinkService
  qr: QrService
  events: Events
  log: Pick<Logger, 'fault'>
}) {
  const { config, links, qr, events, log } = deps
  const dir = join(config.data_dir, 'cache', 'qr')
  const memory = createLru<CachedImage>(MEMORY_ENTRIES)
  // Concurrent first requests for one image share one rendering.
  const rendering = new Map<string, Promise<CachedImage>>()

  /** The image's rendering settings; their hash names the file, so changed settings never serve stale files. */
  const settingsFor = (code: string, format: QrFormat, domain = ''): QrInput => ({
    data: `${links.domains.baseOf(domain)}/${code}`,
    format,
  })

  /** Best effort: an image that cannot be written is still served, and rendered again after a restart. */
  async function saveFile(path: string, body: Uint8Array) {
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 })
      // Write then rename, so that a reader never sees half a file.
      const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`
      await writeFile(tmp, body)
      await rename(tmp, path)
    } catch (err) {
      log.fault('qr: cannot write the image cache', err)
    }
  }

  async function fromDiskOrRender(path: string, input: QrInput, format: QrFormat): Promise<CachedImage> {
    let body: Uint8Array<ArrayBuffer>
    try {
      body = await readFile(path)
    } catch {
      body = (await qr.generate(input, PUBLIC_LANE)).body
      await saveFile(path, body)
    }
    return { body, mime: QR_MIME[format], etag: etagOf(body) }
  }

  // Hashed file names: codes are case-sensitive, file systems not always.
  const fileOf = (key: string, format: QrFormat) => join(dir, `${sha256(key).digest('hex')}.${format}`)

  function load(key: string, format: QrFormat, input: QrInput): Promise<CachedImage> {
    const file = fileOf(key, format)
    const pending = fromDiskOrRender(file, input, format)
      .then((image) => {
        memory.set(key, image)
        return image
      })
      .finally(() => rendering.delete(key))
    rendering.set(key, pending)
    return pending
  }

  function imageOf(code: string, format: QrFormat, domain: string): CachedImage | Promise<CachedImage> {
    const input = settingsFor(code, format, domain)
    const key = JSON.stringify(input)
    return memory.get(key) ?? rendering.get(key) ?? load(key, format, input)
  }

  /**
   * Removes a code's images from memory and disk, at once (two unlinks: deletions are rare), so that they
   * are gone when the delete is answered; a rendering under way is removed once it is saved.
   */
  function forget(code: string, domain: string) {
    for (const format of QR_FORMATS) {
      const key = JSON.stringify(settingsFor(code, format, domain))
      const remove = () => {
        memory.delete(key)
        try {
          rmSync(fileOf(key, format), { force: true })
        } catch (err) {
          log.fault('qr: cannot remove a cached image', err)
        }
      }
      remove()
      rendering.get(key)?.then(remove, () => {})
    }
  }
  events.on('link.deleted', ({ hex, domain }) => forget(hex, domain))

  async function serve(file: string, request: Request): Promise<Response> {
    const m = FILE_NAME.exec(file)
    // An expired (or password-protected) link still gets its image: it only shows the short address,
    // and visiting it answers for the link's state. Unknown codes get nothing.
    // The link of the code on the domain the request came to (SPEC §13).
    const domain = links.domains.multi ? links.domains.ofHost(request.headers.get('host')) : ''
    if (!m || !(await links.resolve(m[1]!, domain))) return notFoundPage()
    const image = await imageOf(m[1]!, m[2] as QrFormat, domain) // a full renderer queue throws a 503 AppError
    const headers = { etag: image.etag, 'cache-control': IMMUTABLE }
    if (matchesIfNoneMatch(request.headers.get('if-none-match'), image.etag))
      return new Response(null, { status: 304, headers })
    return new Response(image.body, {
      headers: { ...headers, 'content-type': image.mime, 'x-content-type-options': 'nosniff' },
    })
  }

  return new Elysia({ name: 'qr-public' }).get('/qr/:file', ({ params, request }) => serve(params.file, request), {
    parse: 'none',
  })
}
