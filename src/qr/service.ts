// QR codes: the rules of the parameters and the rendering (the `qrcode` package), on plain values, never HTTP,
// so the API method and the public /qr/<code> images share it.
import { invalidParameter, missingParameter } from '../kernel/errors'
import {
  drawOver,
  encodePng,
  LOGO_MIN_VERSION,
  SVG_MAX_SIDE,
  logoPlace,
  logoRaster,
  readLogo,
  type QrLogo,
  type Raster,
} from './logo'

// qrcode takes ~25 ms to load: `linkbox serve` would pay it before its first answer, though most
// requests never draw a code. It is loaded with the first QR drawn (in a render worker, see renderer.ts).
let qrcodeModule: Promise<typeof import('qrcode')> | null = null
const loadQrcode = () =>
  (qrcodeModule ??= import('qrcode').then((m) => (m as { default?: typeof import('qrcode') }).default ?? m))

export const QR_FORMATS = ['png', 'svg'] as const
export type QrFormat = (typeof QR_FORMATS)[number]
export const QR_ECC_LEVELS = ['L', 'M', 'Q', 'H'] as const
export type QrEcc = (typeof QR_ECC_LEVELS)[number]

export const QR_SIZE = { min: 64, max: 2048, default: 300 }
export const QR_MARGIN = { min: 0, max: 16, default: 4 }
const DEFAULT_FG = '000000'
const DEFAULT_BG = 'ffffff'

export const QR_MIME: Record<QrFormat, string> = { png: 'image/png', svg: 'image/svg+xml' }

/** What version 40 (the largest symbol) holds per level, by the densest mode the text allows. */
export const QR_CAPACITY: Record<QrEcc, { bytes: number; digits: number; alphanumeric: number }> = {
  L: { bytes: 2953, digits: 7089, alphanumeric: 4296 },
  M: { bytes: 2331, digits: 5596, alphanumeric: 3391 },
  Q: { bytes: 1663, digits: 3993, alphanumeric: 2420 },
  H: { bytes: 1273, digits: 3057, alphanumeric: 1852 },
}
const MAX_ENCODABLE_BYTES = QR_CAPACITY.L.digits

/** Parameters as they arrive (strings from a query string; anything at all from elsewhere). */
export interface QrInput {
  data: unknown
  format?: unknown
  fg?: unknown
  bg?: unknown
  ecc?: unknown
  size?: unknown
  margin?: unknown
  /** A PNG or SVG file (a Blob): drawn in the middle, at ecc H. */
  logo?: unknown
}

export interface QrSettings {
  data: string
  format: QrFormat
  /** Colours as lower-case hex without "#": 6 digits when opaque, 8 (with alpha) otherwise. */
  fg: string
  bg: string
  ecc: QrEcc
  size: number
  margin: number
  /** Checked by readLogo (logo.ts); `ecc` is then H. */
  logo?: QrLogo
}

export interface QrImage extends Omit<QrSettings, 'data' | 'logo'> {
  mime: string
  body: Uint8Array<ArrayBuffer>
}

// An empty string counts as "not given", as in the link methods: a form left blank or `?fg=` in a
// hand-written URL then means the default rather than an error.
const given = (v: unknown) => v !== undefined && v !== null && v !== ''

function text(name: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidParameter(name, 'it must be a string')
  return value
}

/** Case-insensitive ("svg", "SVG"; "h", "H"): the answer reports the canonical spelling. */
function oneOf<T extends string>(name: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (!given(value)) return fallback
  const v = text(name, value)
  const found = allowed.find((a) => a.toLowerCase() === v.toLowerCase())
  if (!found) throw invalidParameter(name, `it must be one of ${allowed.join(', ')}`)
  return found
}

function wholeNumber(name: string, value: unknown, range: { min: number; max: number; default: number }, unit: string) {
  if (!given(value)) return range.default
  // A JSON body (POST) carries numbers as numbers.
  const v = typeof value === 'number' && Number.isInteger(value) ? String(value) : text(name, value)
  const n = /^\d{1,5}$/.test(v) ? Number(v) : NaN
  if (!(n >= range.min && n <= range.max))
    throw invalidParameter(name, `it must be a whole number of ${unit} from ${range.min} to ${range.max}`)
  return n
}

/** "#RGB", "RRGGBB" or "RRGGBBAA", "#" optional → lower-case, 6 digits, or 8 when not opaque. */
export function normaliseColour(name: string, value: unknown, fallback: string): string {
  if (!given(value)) return fallback
  const v = text(name, value).replace(/^#/, '').toLowerCase()
  if (!/^([0-9a-f]{3}|[0-9a-f]{6}|[0-9a-f]{8})$/.test(v))
    throw invalidParameter(name, 'it must be a hex colour of 3, 6 or 8 digits (RGB, RRGGBB or RRGGBBAA), "#" optional')
  if (v.length === 3) return [...v].map((c) => c + c).join('')
  return v.endsWith('ff') && v.length === 8 ? v.slice(0, 6) : v
}

function readData(value: unknown): string {
  if (!given(value)) throw missingParameter('data')
  return text('data', value)
}

/** Checks every parameter (except what depends on the encoded symbol) and fills in the defaults. */
export function parseQrSettings(input: QrInput): QrSettings {
  return {
    data: readData(input.data),
    format: oneOf('format', input.format, QR_FORMATS, 'png'),
    fg: normaliseColour('fg', input.fg, DEFAULT_FG),
    bg: normaliseColour('bg', input.bg, DEFAULT_BG),
    ecc: oneOf('ecc', input.ecc, QR_ECC_LEVELS, 'M'),
    size: wholeNumber('size', input.size, QR_SIZE, 'pixels'),
    margin: wholeNumber('margin', input.margin, QR_MARGIN, 'modules'),
  }
}

function tooLong(data: string, ecc: QrEcc) {
  const c = QR_CAPACITY[ecc]
  const bytes = Buffer.byteLength(data, 'utf8')
  return invalidParameter(
    'data',
    `it is ${bytes} bytes (UTF-8), more than a QR code holds at ecc ${ecc}: at most ${c.bytes} bytes ` +
      `(${c.digits} if only digits, ${c.alphanumeric} if only 0-9, A-Z, space and $%*+-./:)` +
      (ecc === 'L' ? '' : `; a lower ecc holds more (L: ${QR_CAPACITY.L.bytes} bytes)`),
  )
}

/** Runs the encoder, turning its "too big" into a 400 that states the capacity at this ecc. */
async function withinCapacity<T>(s: QrSettings, encode: () => T | Promise<T>): Promise<T> {
  // Anything longer than the densest capacity fails anyway: skip the encoder's work on it.
  if (Buffer.byteLength(s.data, 'utf8') > MAX_ENCODABLE_BYTES) throw tooLong(s.data, s.ecc)
  try {
    return await encode()
  } catch (err) {
    if (err instanceof Error && /too big/.test(err.message)) throw tooLong(s.data, s.ecc)
    throw err
  }
}

/**
 * Pixels a module needs at least. Below 2 no reader decodes the code (modules of 1-2 pixels alternate and
 * blur), and below 1 qrcode silently ignores `width`; a smaller size is refused, naming the smallest that works.
 */
export const QR_MIN_MODULE_PX = 2

// The widest symbol (version 40) is 177 modules: only smaller sizes need the symbol built first.
async function checkSizeFits(s: QrSettings) {
  if (s.size >= QR_MIN_MODULE_PX * (177 + 2 * s.margin)) return
  const QRCode = await loadQrcode()
  const symbol = await withinCapacity(s, () => QRCode.create(s.data, { errorCorrectionLevel: s.ecc }))
  const modules = symbol.modules.size + 2 * s.margin
  if (s.size < QR_MIN_MODULE_PX * modules) throw sizeTooSmall(s, modules)
}

// A QR raster repeats each row of modules over many pixel rows: the PNG "Up" filter turns those into
// zeros that deflate packs tightly. It is 3-4 times faster than pngjs's default of trying all five
// filters on every row, with files as small.
const PNG_ENCODING = { filterType: 2, deflateLevel: 9, deflateStrategy: 0 }

async function draw(s: QrSettings): Promise<Uint8Array<ArrayBuffer>> {
  const QRCode = await loadQrcode()
  const options = {
    errorCorrectionLevel: s.ecc,
    margin: s.margin,
    color: { dark: `#${s.fg}`, light: `#${s.bg}` },
  }
  if (s.format === 'svg') {
    const svg = await QRCode.toString(s.data, { ...options, type: 'svg', width: s.size })
    return new TextEncoder().encode(svg)
  }
  const png = await QRCode.toBuffer(s.data, {
    ...options,
    type: 'png',
    // qrcode sizes a PNG as floor(modules × (width / modules)), which floating point often puts one
    // pixel short (e.g. width 97 for 21 modules gives 96): half a pixel more lands on `size` exactly.
    width: s.size + 0.5,
    // A copy: qrcode writes the image's width and height into this object.
    rendererOpts: { ...PNG_ENCODING },
  })
  return new Uint8Array(png)
}

const sizeTooSmall = (s: QrSettings, modules: number) =>
  invalidParameter(
    'size',
    `it must be at least ${QR_MIN_MODULE_PX * modules} pixels for this data at ecc ${s.ecc} with margin ${s.margin}${s.logo ? ' and a logo' : ''} ` +
      `(${modules} modules of ${QR_MIN_MODULE_PX} pixels: smaller modules cannot be scanned); or use less data, a lower ecc or a smaller margin`,
  )

/** "rrggbb" or "rrggbbaa" → [r, g, b, a]. */
const rgba = (hex: string) => [0, 2, 4, 6].map((i) => (i < hex.length ? parseInt(hex.slice(i, i + 2), 16) : 255))

/** The symbol's pixels as qrcode draws them into a PNG: `scale` pixels a module, the quiet zone around. */
function drawSymbol(symbol: import('qrcode').QRCode, s: QrSettings): Raster {
  const n = symbol.modules.size
  const scale = s.size / (n + 2 * s.margin)
  const edge = s.margin * scale
  const dark = rgba(s.fg)
  const light = rgba(s.bg)
  const data = new Uint8Array(s.size * s.size * 4)
  for (let y = 0; y < s.size; y++) {
    const row = y >= edge && y < s.size - edge ? Math.floor((y - edge) / scale) : -1
    for (let x = 0; x < s.size; x++) {
      const col = x >= edge && x < s.size - edge ? Math.floor((x - edge) / scale) : -1
      const on = row >= 0 && col >= 0 && row < n && col < n && symbol.modules.data[row * n + col]
      data.set(on ? dark : light, (y * s.size + x) * 4)
    }
  }
  return { width: s.size, height: s.size, data }
}

/** A fill attribute as qrcode writes it: the colour, and its opacity when not opaque. */
function fillOf(hex: string): string {
  const alpha = hex.length === 8 ? parseInt(hex.slice(6), 16) / 255 : 1
  return `fill="#${hex.slice(0, 6)}"${alpha < 1 ? ` fill-opacity="${alpha.toFixed(2).slice(1)}"` : ''}`
}

/**
 * A code with a logo (ecc H, at least version LOGO_MIN_VERSION): the modules under a plate of the background
 * colour in the middle give way to it, and the logo is drawn on the plate. A PNG gets the logo's pixels; an
 * SVG gets them as an embedded PNG (twice the pixels the box has at `size`, for sharp zooming).
 */
async function drawWithLogo(s: QrSettings, logo: QrLogo): Promise<Uint8Array<ArrayBuffer>> {
  const QRCode = await loadQrcode()
  let symbol = await withinCapacity(s, () => QRCode.create(s.data, { errorCorrectionLevel: s.ecc }))
  if (symbol.version < LOGO_MIN_VERSION)
    symbol = QRCode.create(s.data, { errorCorrectionLevel: s.ecc, version: LOGO_MIN_VERSION })
  const n = symbol.modules.size
  const modules = n + 2 * s.margin
  if (s.size < QR_MIN_MODULE_PX * modules) throw sizeTooSmall(s, modules)
  const scale = s.size / modules
  const { plate, box } = logoPlace(n, s.margin)
  if (s.format === 'svg') {
    const side = Math.min(SVG_MAX_SIDE, Math.max(64, Math.round(box.side * scale * 2)))
    const pixels = await encodePng(await logoRaster(logo, side, side))
    const svg = await QRCode.toString(s.data, {
      type: 'svg',
      width: s.size,
      margin: s.margin,
      errorCorrectionLevel: s.ecc,
      version: symbol.version,
      color: { dark: `#${s.fg}`, light: `#${s.bg}` },
    })
    const overlay =
      `<rect x="${plate.at}" y="${plate.at}" width="${plate.side}" height="${plate.side}" ${fillOf(s.bg)}/>` +
      `<image x="${box.at}" y="${box.at}" width="${box.side}" height="${box.side}" preserveAspectRatio="xMidYMid meet" ` +
      `href="data:image/png;base64,${Buffer.from(pixels).toString('base64')}"/>`
    return new TextEncoder().encode(svg.replace(/<\/svg>\s*$/, `${overlay}</svg>`))
  }
  const raster = drawSymbol(symbol, s)
  const [from, to] = [Math.round(plate.at * scale), Math.round((plate.at + plate.side) * scale)]
  const bg = rgba(s.bg)
  for (let y = from; y < to; y++) for (let x = from; x < to; x++) raster.data.set(bg, (y * s.size + x) * 4)
  const boxPx = Math.max(1, Math.floor(box.side * scale))
  const image = await logoRaster(logo, boxPx, boxPx)
  const centre = (box.at + box.side / 2) * scale
  drawOver(raster, image, Math.round(centre - image.width / 2), Math.round(centre - image.height / 2))
  return encodePng(raster, PNG_ENCODING)
}

/** Renders a QR code; `data` over the capacity, or a `size` below QR_MIN_MODULE_PX per module, is refused. */
export async function renderQr(settings: QrSettings): Promise<QrImage> {
  const logo = settings.logo
  if (!logo) await checkSizeFits(settings)
  const body = await withinCapacity(settings, () => (logo ? drawWithLogo(settings, logo) : draw(settings)))
  const { format, fg, bg, ecc, size, margin } = settings
  return { format, mime: QR_MIME[format], size, ecc, fg, bg, margin, body }
}

/** `renderer` draws the images (renderer.ts: on a worker thread); the parameters are checked before, here. */
export function createQrService(renderer: { render: (settings: QrSettings, lane: string) => Promise<QrImage> }) {
  return {
    /**
     * Validates the parameters (throwing at once) and renders the image in the renderer's `lane`:
     * PUBLIC_LANE or callerLane(account), see renderer.ts.
     */
    generate: (input: QrInput, lane: string): Promise<QrImage> => {
      const settings = parseQrSettings(input)
      if (!given(input.logo)) return renderer.render(settings, lane)
      // A logo needs the strongest error correction: the answer's `ecc` says H whatever was asked.
      return readLogo(input.logo).then((logo) => renderer.render({ ...settings, ecc: 'H', logo }, lane))
    },
  }
}
export type QrService = ReturnType<typeof createQrService>
