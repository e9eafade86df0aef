// A social preview's image (SPEC §2a): a PNG, JPEG or WebP of at most 1 MiB, checked by its bytes here (type and
// the size its header declares, before anything decodes it), then re-encoded off this thread (og-image-pool.ts).
import { AppError, invalidParameter } from '../kernel/errors'

export const OG_IMAGE_MAX_BYTES = 1024 * 1024
/** The largest width or height an upload may declare, and the most pixels (refused from its header). */
export const OG_IMAGE_MAX_SIDE = 4096
export const OG_IMAGE_MAX_PIXELS = 4096 * 4096
/** The stored image fits in this box (proportions kept, never enlarged): the size crawlers ask for. */
export const OG_IMAGE_BOX = { width: 1200, height: 630 }

export type OgImageKind = 'png' | 'jpeg' | 'webp'
export interface OgUpload {
  kind: OgImageKind
  width: number
  height: number
  bytes: Uint8Array<ArrayBuffer>
}
/** The image as stored (link_images) and served: re-encoded, its metadata gone. */
export interface OgImage {
  version: string
  type: 'image/png' | 'image/jpeg'
  width: number
  height: number
  bytes: Uint8Array
}

export const badImage = (rule: string) => invalidParameter('og_image', rule)

const starts = (b: Uint8Array, bytes: number[], at = 0) => bytes.every((v, i) => b[at + i] === v)
const ascii = (b: Uint8Array, at: number, n: number) => String.fromCharCode(...b.subarray(at, at + n))

/** The kind of image these bytes are, by their signature; null for anything else. */
export function kindOf(b: Uint8Array): OgImageKind | null {
  if (starts(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png'
  if (starts(b, [0xff, 0xd8, 0xff])) return 'jpeg'
  if (b.length >= 16 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 4) === 'WEBP') return 'webp'
  return null
}

function pngSize(b: Uint8Array) {
  if (b.length < 24 || ascii(b, 12, 4) !== 'IHDR') return null
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
  return { width: v.getUint32(16), height: v.getUint32(20) }
}

/** A JPEG's size from its first frame header (SOFn), walking the markers before it. */
function jpegSize(b: Uint8Array) {
  let at = 2
  while (at + 9 < b.length) {
    if (b[at] !== 0xff) return null
    const marker = b[at + 1]!
    if (marker === 0xff) {
      at++
      continue
    }
    const length = (b[at + 2]! << 8) | b[at + 3]!
    // SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC)
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return { height: (b[at + 5]! << 8) | b[at + 6]!, width: (b[at + 7]! << 8) | b[at + 8]! }
    if (length < 2) return null
    at += 2 + length
  }
  return null
}

/** A WebP's size from its first chunk: lossy (VP8), lossless (VP8L) or extended (VP8X; animations refused). */
function webpSize(b: Uint8Array) {
  if (b.length < 30) return null
  const chunk = ascii(b, 12, 4)
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
  if (chunk === 'VP8 ' && starts(b, [0x9d, 0x01, 0x2a], 23))
    return { width: v.getUint16(26, true) & 0x3fff, height: v.getUint16(28, true) & 0x3fff }
  if (chunk === 'VP8L' && b[20] === 0x2f) {
    const bits = v.getUint32(21, true)
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
  }
  if (chunk === 'VP8X') {
    if (b[20]! & 0x02) throw badImage('an animated WebP cannot be a preview image; send one still image')
    const u24 = (at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16)
    return { width: u24(24) + 1, height: u24(27) + 1 }
  }
  return null
}

/** The image's size as its header declares it, refused outside the bounds. */
export function declaredSize(kind: OgImageKind, b: Uint8Array): { width: number; height: number } {
  const size = kind === 'png' ? pngSize(b) : kind === 'jpeg' ? jpegSize(b) : webpSize(b)
  if (!size) throw badImage(`the ${kind.toUpperCase()} has no readable header`)
  const { width, height } = size
  if (width < 1 || height < 1 || width > OG_IMAGE_MAX_SIDE || height > OG_IMAGE_MAX_SIDE)
    throw badImage(`it is ${width}×${height} pixels; at most ${OG_IMAGE_MAX_SIDE}×${OG_IMAGE_MAX_SIDE} are accepted`)
  if (width * height > OG_IMAGE_MAX_PIXELS) throw badImage(`it has more than ${OG_IMAGE_MAX_PIXELS} pixels`)
  return size
}

/**
 * The upload's bytes, checked: a file (Blob) of at most OG_IMAGE_MAX_BYTES that is a PNG, JPEG or WebP by its
 * signature, with a header within the bounds. Throws the 413 or the 400 naming `og_image`.
 */
export async function readOgUpload(value: unknown): Promise<OgUpload> {
  if (!(value instanceof Blob)) throw badImage('it must be a PNG, JPEG or WebP file sent in a multipart/form-data body')
  if (value.size > OG_IMAGE_MAX_BYTES)
    throw new AppError(
      413,
      'too_large',
      `The parameter "og_image" is larger than the limit of ${OG_IMAGE_MAX_BYTES} bytes (1 MiB): it has ${value.size} bytes.`,
    )
  const bytes = new Uint8Array(await value.arrayBuffer())
  const kind = kindOf(bytes)
  if (!kind) throw badImage('it must be a PNG, JPEG or WebP image; these bytes are none of them')
  return { kind, bytes, ...declaredSize(kind, bytes) }
}

/** The file extension of a stored image's type (the path it is served at). */
export const extensionOf = (type: string) => (type === 'image/jpeg' ? 'jpg' : 'png')
