// On the preview-image worker (og-image-worker.ts): an upload checked by og-image.ts decoded (pngjs, jpeg-js, or
// libwebp compiled to WebAssembly), shrunk into OG_IMAGE_BOX and encoded anew, so no byte of what was sent, nor
// its metadata, is ever served. Every decoder here works inside JavaScript's or WebAssembly's bounds.
import { pngDataIntact } from '../kernel/png-data'
import { badImage, declaredSize, OG_IMAGE_BOX, type OgImage, type OgUpload } from './og-image'

interface Raster {
  width: number
  height: number
  data: Uint8Array
}

const unreadable = (kind: string) => badImage(`it is not a ${kind.toUpperCase()} image that can be read`)

async function decodePng(bytes: Uint8Array, width: number, height: number): Promise<Raster> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  // The pixel data inflated and bounded first (kernel/png-data.ts), as for QR logos.
  if (!pngDataIntact(buffer, width, height)) throw unreadable('png')
  const { PNG } = await import('pngjs')
  try {
    const png = await new Promise<import('pngjs').PNG>((resolve, reject) =>
      new PNG().parse(buffer, (err, png) => (err ? reject(err) : resolve(png))),
    )
    return { width: png.width, height: png.height, data: png.data }
  } catch {
    throw unreadable('png')
  }
}

async function decodeJpeg(bytes: Uint8Array): Promise<Raster> {
  const jpeg = await import('jpeg-js')
  try {
    // Its own bounds besides the header's: 17 megapixels, 160 MiB of buffers.
    return jpeg.decode(bytes, { useTArray: true, formatAsRGBA: true, maxResolutionInMP: 17, maxMemoryUsageInMB: 160 })
  } catch {
    throw unreadable('jpeg')
  }
}

let webp: Promise<(b: ArrayBuffer) => Promise<{ width: number; height: number; data: Uint8ClampedArray }>> | null = null
/** libwebp's decoder: its WebAssembly module is a file of the build (embedded in the binary), compiled once. */
function webpDecoder() {
  webp ??= (async () => {
    const [{ default: decode, init }, { default: wasm }] = await Promise.all([
      import('@jsquash/webp/decode.js'),
      import('./og-webp-wasm'),
    ])
    await init(new WebAssembly.Module(await Bun.file(wasm).arrayBuffer()))
    return decode
  })()
  return webp
}

async function decodeWebp(bytes: Uint8Array): Promise<Raster> {
  const decode = await webpDecoder()
  try {
    const image = await decode(bytes.slice().buffer)
    return { width: image.width, height: image.height, data: new Uint8Array(image.data.buffer) }
  } catch {
    throw unreadable('webp')
  }
}

/** `src` shrunk to fit in width × height (proportions kept; never enlarged): each pixel the mean of those it covers. */
export function shrink(src: Raster, width: number, height: number): Raster {
  const scale = Math.min(1, width / src.width, height / src.height)
  if (scale === 1) return src
  const tw = Math.max(1, Math.round(src.width * scale))
  const th = Math.max(1, Math.round(src.height * scale))
  const out = new Uint8Array(tw * th * 4)
  const s = src.data
  for (let y = 0; y < th; y++) {
    const y0 = Math.floor(y / scale)
    const y1 = Math.max(y0 + 1, Math.min(src.height, Math.floor((y + 1) / scale)))
    for (let x = 0; x < tw; x++) {
      const x0 = Math.floor(x / scale)
      const x1 = Math.max(x0 + 1, Math.min(src.width, Math.floor((x + 1) / scale)))
      let r = 0,
        g = 0,
        b = 0,
        a = 0
      for (let sy = y0; sy < y1; sy++)
        for (let sx = x0; sx < x1; sx++) {
          const i = (sy * src.width + sx) * 4
          const w = s[i + 3]!
          r += s[i]! * w
          g += s[i + 1]! * w
          b += s[i + 2]! * w
          a += w
        }
      const o = (y * tw + x) * 4
      if (a > 0) {
        out[o] = Math.round(r / a)
        out[o + 1] = Math.round(g / a)
        out[o + 2] = Math.round(b / a)
      }
      out[o + 3] = Math.round(a / ((x1 - x0) * (y1 - y0)))
    }
  }
  return { width: tw, height: th, data: out }
}

const opaque = (r: Raster) => {
  for (let i = 3; i < r.data.length; i += 4) if (r.data[i] !== 255) return false
  return true
}

async function encode(r: Raster): Promise<Pick<OgImage, 'type' | 'bytes'>> {
  if (opaque(r)) {
    const jpeg = await import('jpeg-js')
    return { type: 'image/jpeg', bytes: new Uint8Array(jpeg.encode(r, 85).data) }
  }
  const { PNG } = await import('pngjs')
  const png = new PNG({ width: r.width, height: r.height })
  png.data = Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength)
  return { type: 'image/png', bytes: new Uint8Array(PNG.sync.write(png, { colorType: 6 })) }
}

/** The upload decoded, shrunk and encoded anew (JPEG when opaque, else PNG); its version a hash of the result. */
export async function reencode(upload: OgUpload): Promise<OgImage> {
  const { width, height } = declaredSize(upload.kind, upload.bytes) // the worker trusts nothing it is sent
  const raster =
    upload.kind === 'png'
      ? await decodePng(upload.bytes, width, height)
      : upload.kind === 'jpeg'
        ? await decodeJpeg(upload.bytes)
        : await decodeWebp(upload.bytes)
  if (raster.width !== width || raster.height !== height || raster.data.length !== width * height * 4)
    throw badImage(`the ${upload.kind.toUpperCase()} decodes to another size than its header declares`)
  const fitted = shrink(raster, OG_IMAGE_BOX.width, OG_IMAGE_BOX.height)
  const { type, bytes } = await encode(fitted)
  const version = new Bun.CryptoHasher('sha256').update(bytes).digest('hex').slice(0, 12)
  return { version, type, width: fitted.width, height: fitted.height, bytes }
}
