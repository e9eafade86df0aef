// A logo in the middle of a QR code: a PNG or SVG checked by its bytes, turned into bounded pixels (SVG through
// svg-clean.ts's allow-list) and drawn on the render worker; no markup of a logo reaches an answer (ARCHITECTURE).
import { pngDataIntact } from '../kernel/png-data'
import { AppError, invalidParameter } from '../kernel/errors'

export const LOGO_MAX_BYTES = 256 * 1024
/** The largest width or height a PNG logo may declare (refused from its header, before decoding). */
export const LOGO_MAX_SIDE = 4096
/** The plate under the logo covers at most this share of the symbol's side (about 5 % of its area). */
const LOGO_SHARE = 0.22
/** Codes with a logo are at least this version (37 modules): a smaller one has too few codewords to lose any. */
export const LOGO_MIN_VERSION = 5

export { SVG_MAX_DEPTH, SVG_MAX_ELEMENTS, SVG_MAX_LAYERS, SVG_MAX_SIDE } from './svg-limits'

export type LogoKind = 'png' | 'svg'
export interface QrLogo {
  kind: LogoKind
  bytes: Uint8Array<ArrayBuffer>
}

const badLogo = (rule: string) => invalidParameter('logo', rule)

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
const isPng = (b: Uint8Array) => PNG_SIGNATURE.every((v, i) => b[i] === v)

/** Width and height from a PNG's IHDR (the first chunk), or null when it has none. */
function pngSize(b: Uint8Array): { width: number; height: number } | null {
  if (b.length < 24 || !isPng(b)) return null
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength)
  const ihdr = String.fromCharCode(b[12]!, b[13]!, b[14]!, b[15]!)
  if (view.getUint32(8) !== 13 || ihdr !== 'IHDR') return null
  return { width: view.getUint32(16), height: view.getUint32(20) }
}

function checkPngSize(b: Uint8Array, what: string) {
  const size = pngSize(b)
  if (!size) throw badLogo(`${what} has no PNG header`)
  const { width, height } = size
  if (width < 1 || height < 1 || width > LOGO_MAX_SIDE || height > LOGO_MAX_SIDE)
    throw badLogo(`${what} is ${width}×${height} pixels; at most ${LOGO_MAX_SIDE}×${LOGO_MAX_SIDE} are drawn`)
}

// An SVG document: an optional byte-order mark, then processing instructions (the XML declaration, a
// stylesheet), comments and a DOCTYPE (with an internal subset, which cleanSvg refuses), then the root <svg>.
// Each part ends at its first possible end (never spans the next), so that a mismatch costs one pass: these
// patterns run over what anyone may send, and a pattern that can backtrack across many parts takes forever.
const SVG_START =
  /^\uFEFF?\s*(?:(?:<\?(?:[^?]|\?(?!>))*\?>|<!--(?:[^-]|-(?!->))*-->|<!DOCTYPE\s[^<>[]*(?:\[[^\]]*\]\s*)?>)\s*)*<svg[\s/>]/

/**
 * The logo's bytes, checked: at most LOGO_MAX_BYTES, a PNG (by its signature, with a header within
 * LOGO_MAX_SIDE) or an SVG (UTF-8 text whose root element is <svg>). Throws the 413 or 400 naming `logo`.
 */
export async function readLogo(value: unknown): Promise<QrLogo> {
  if (!(value instanceof Blob)) throw badLogo('it must be a PNG or SVG file sent in a multipart/form-data body')
  if (value.size > LOGO_MAX_BYTES)
    throw new AppError(
      413,
      'too_large',
      `The parameter "logo" is larger than the limit of ${LOGO_MAX_BYTES} bytes (256 KiB): it has ${value.size} bytes.`,
    )
  const bytes = new Uint8Array(await value.arrayBuffer())
  if (isPng(bytes)) {
    checkPngSize(bytes, 'the PNG')
    return { kind: 'png', bytes }
  }
  // The start decides (that the whole is UTF-8 is checked on the worker, with the rest of the SVG).
  if (!SVG_START.test(new TextDecoder().decode(bytes.subarray(0, 16 * 1024))))
    throw badLogo('it must be a PNG or SVG image; these bytes are neither')
  return { kind: 'svg', bytes }
}

// ---------------------------------------------------------------------------------------------------------
// On the render worker

/** RGBA pixels, 8 bits a channel, not premultiplied. */
export interface Raster {
  width: number
  height: number
  data: Uint8Array
}

let pngjs: Promise<typeof import('pngjs')> | null = null
const loadPngjs = () =>
  (pngjs ??= import('pngjs').then((m) => (m as { default?: typeof import('pngjs') }).default ?? m))

let resvg: Promise<typeof import('@resvg/resvg-js')> | null = null
const loadResvg = () => (resvg ??= import('@resvg/resvg-js'))

/** The SVG logo drawn to fit within width × height (its own proportions kept). */
async function rasteriseSvg(bytes: Uint8Array, width: number, height: number): Promise<Raster> {
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw badLogo('an SVG logo must be UTF-8 text')
  }
  // Loaded here, on the render worker: the server's start does not pay for the XML parser.
  const svg = (await import('./svg-clean')).cleanSvg(text)
  let Resvg: typeof import('@resvg/resvg-js').Resvg
  try {
    ;({ Resvg } = await loadResvg())
  } catch (err) {
    console.error('qr: the SVG renderer (resvg) cannot be loaded:', err)
    throw new AppError(
      400,
      'invalid_parameter',
      'The parameter "logo" is invalid: this installation cannot draw SVG logos; send a PNG.',
    )
  }
  // No system fonts: text in a logo is not drawn (a font file is a file read on the logo's behalf).
  const font = { loadSystemFonts: false }
  let own: { width: number; height: number }
  try {
    const probe = new Resvg(svg, { font })
    own = { width: probe.width, height: probe.height }
  } catch {
    throw badLogo('it is not an SVG image that can be drawn')
  }
  if (!(own.width > 0 && own.height > 0)) throw badLogo('the SVG has no size to draw')
  const fitTo =
    own.width / own.height >= width / height
      ? { mode: 'width' as const, value: width }
      : { mode: 'height' as const, value: height }
  const image = new Resvg(svg, { font, fitTo }).render()
  return { width: image.width, height: image.height, data: new Uint8Array(image.pixels) }
}

/**
 * The PNG's pixels. Its zlib stream is inflated first by node:zlib, bounded by the size the header declares:
 * pngjs's own synchronous inflate reads Node's zlib internals, and under Bun it misses a broken stream's
 * error and returns an unfilled Buffer.allocUnsafe (old heap memory drawn as the logo: 200, not 400).
 */
async function decodePng(bytes: Uint8Array): Promise<Raster> {
  checkPngSize(bytes, 'the PNG') // the worker trusts nothing it is sent
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  checkPngData(buffer)
  const { PNG } = await loadPngjs()
  try {
    // The streaming parser: its inflate reports errors through node:zlib's stream events, which Bun keeps.
    const png = await new Promise<import('pngjs').PNG>((resolve, reject) =>
      new PNG().parse(buffer, (err, png) => (err ? reject(err) : resolve(png))),
    )
    return {
      width: png.width,
      height: png.height,
      data: new Uint8Array(png.data.buffer, png.data.byteOffset, png.data.byteLength),
    }
  } catch {
    throw badLogo('it is not a PNG image that can be read')
  }
}

/** Refuses a PNG whose IDAT stream is broken, cut short or inflates past what IHDR declares (kernel/png-data.ts). */
function checkPngData(b: Buffer) {
  const { width, height } = pngSize(b)!
  if (!pngDataIntact(b, width, height))
    throw badLogo('it is not a PNG image that can be read: its pixel data is broken')
}

/**
 * `src` scaled to fit within width × height, proportions kept: averaged over the source pixels each target
 * pixel covers when shrinking, interpolated between the nearest four when growing (premultiplied alpha).
 */
export function fitRaster(src: Raster, width: number, height: number): Raster {
  const scale = Math.min(width / src.width, height / src.height)
  const tw = Math.max(1, Math.round(src.width * scale))
  const th = Math.max(1, Math.round(src.height * scale))
  const out = new Uint8Array(tw * th * 4)
  const s = src.data
  const acc = [0, 0, 0, 0]
  const add = (x: number, y: number, w: number) => {
    const i = (y * src.width + x) * 4
    const a = (s[i + 3]! / 255) * w
    acc[0]! += s[i]! * a
    acc[1]! += s[i + 1]! * a
    acc[2]! += s[i + 2]! * a
    acc[3]! += a
  }
  for (let y = 0; y < th; y++) {
    for (let x = 0; x < tw; x++) {
      acc.fill(0)
      let weight = 0
      if (scale < 1) {
        const x0 = Math.floor(x / scale),
          x1 = Math.max(x0 + 1, Math.min(src.width, Math.floor((x + 1) / scale)))
        const y0 = Math.floor(y / scale),
          y1 = Math.max(y0 + 1, Math.min(src.height, Math.floor((y + 1) / scale)))
        for (let sy = y0; sy < y1; sy++) for (let sx = x0; sx < x1; sx++) add(sx, sy, 1)
        weight = (x1 - x0) * (y1 - y0)
      } else {
        const fx = Math.min(src.width - 1, Math.max(0, (x + 0.5) / scale - 0.5))
        const fy = Math.min(src.height - 1, Math.max(0, (y + 0.5) / scale - 0.5))
        const x0 = Math.floor(fx),
          y0 = Math.floor(fy)
        const x1 = Math.min(src.width - 1, x0 + 1),
          y1 = Math.min(src.height - 1, y0 + 1)
        const dx = fx - x0,
          dy = fy - y0
        add(x0, y0, (1 - dx) * (1 - dy))
        add(x1, y0, dx * (1 - dy))
        add(x0, y1, (1 - dx) * dy)
        add(x1, y1, dx * dy)
        weight = 1
      }
      const o = (y * tw + x) * 4
      const alpha = acc[3]! / weight
      if (alpha > 0) {
        out[o] = Math.round(acc[0]! / acc[3]!)
        out[o + 1] = Math.round(acc[1]! / acc[3]!)
        out[o + 2] = Math.round(acc[2]! / acc[3]!)
      }
      out[o + 3] = Math.round(alpha * 255)
    }
  }
  return { width: tw, height: th, data: out }
}

/** The logo's pixels, fitted within width × height. */
export async function logoRaster(logo: QrLogo, width: number, height: number): Promise<Raster> {
  if (logo.kind === 'svg') return rasteriseSvg(logo.bytes, width, height)
  return fitRaster(await decodePng(logo.bytes), width, height)
}

/** The plate and the box the logo is fitted in, in modules from the image's edge (quiet zone included). */
export function logoPlace(modules: number, margin: number) {
  // An odd number of modules, like the symbol's side, so the plate sits on whole modules, centred.
  let plate = Math.floor(modules * LOGO_SHARE)
  if (plate % 2 === 0) plate--
  const at = margin + (modules - plate) / 2
  // Half a module of plate around the logo keeps it apart from the modules.
  return { plate: { at, side: plate }, box: { at: at + 0.5, side: plate - 1 } }
}

/** Draws `src` over `dst` at (left, top) ("source over", straight alpha). */
export function drawOver(dst: Raster, src: Raster, left: number, top: number) {
  for (let y = 0; y < src.height; y++) {
    const dy = top + y
    if (dy < 0 || dy >= dst.height) continue
    for (let x = 0; x < src.width; x++) {
      const dx = left + x
      if (dx < 0 || dx >= dst.width) continue
      const s = (y * src.width + x) * 4
      const d = (dy * dst.width + dx) * 4
      const sa = src.data[s + 3]! / 255
      if (sa === 0) continue
      const da = dst.data[d + 3]! / 255
      const oa = sa + da * (1 - sa)
      for (let c = 0; c < 3; c++)
        dst.data[d + c] = Math.round((src.data[s + c]! * sa + dst.data[d + c]! * da * (1 - sa)) / oa)
      dst.data[d + 3] = Math.round(oa * 255)
    }
  }
}

/** A PNG of the raster (for the image an SVG answer embeds). */
export async function encodePng(
  r: Raster,
  options: { filterType?: number; deflateLevel?: number; deflateStrategy?: number } = {},
): Promise<Uint8Array<ArrayBuffer>> {
  const { PNG } = await loadPngjs()
  const png = new PNG({ width: r.width, height: r.height })
  png.data = Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength)
  return new Uint8Array(PNG.sync.write(png, { colorType: 6, ...options }))
}
