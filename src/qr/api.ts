// GET /api/qr.json: query parameters in, QR image out — described in the envelope by default, or the
// image itself with raw=1 (for <img src> and scripts that want the bytes).
import { invalidParameter } from '../errors'
import type { ApiMethod } from '../http/api'
import type { Params } from '../http/params'
import { callerLane } from './renderer'
import { QR_CAPACITY, QR_MARGIN, QR_SIZE, type QrImage, type QrService } from './service'

// The same parameters give the same image, but the request carries a key and is rate limited: only
// the caller's own browser may keep it, never a shared cache.
const RAW_CACHE_CONTROL = 'private, max-age=86400'

/** raw=1/true: the image; raw=0/false or absent: the envelope. */
function wantsRaw(value: unknown): boolean {
  if (value === undefined || value === '' || value === '0' || value === 'false') return false
  if (value === '1' || value === 'true') return true
  throw invalidParameter('raw', 'it must be 1 (the image itself) or 0 (the JSON answer)')
}

function imageResponse(image: QrImage): Response {
  return new Response(image.body, {
    headers: {
      'content-type': image.mime,
      'cache-control': RAW_CACHE_CONTROL,
      'x-content-type-options': 'nosniff',
    },
  })
}

function describe(image: QrImage) {
  const { format, mime, size, ecc, fg, bg, margin, body } = image
  const data_uri = `data:${mime};base64,${Buffer.from(body).toString('base64')}`
  const base = { format, mime, size, ecc, fg, bg, margin, data_uri }
  return format === 'svg' ? { ...base, svg: new TextDecoder().decode(body) } : base
}

const settingsOf = (p: Params) => ({ data: p.data, format: p.format, fg: p.fg, bg: p.bg, ecc: p.ecc, size: p.size, margin: p.margin })

export function qrApi(qr: QrService): ApiMethod[] {
  return [
    {
      verb: 'GET',
      path: '/api/qr.json',
      key: 'required',
      scope: 'qr',
      marketplace: true,
      summary: 'Generate a QR code (PNG or SVG) for a text or address',
      params: [
        {
          name: 'data',
          required: true,
          type: 'string',
          description: `Text to encode (UTF-8); at most ${Object.entries(QR_CAPACITY).map(([ecc, c]) => `${c.bytes} bytes at ecc ${ecc}`).join(', ')}`,
        },
        { name: 'format', type: 'string', description: 'png (default) or svg' },
        { name: 'fg', type: 'string', description: 'Foreground colour, hex RGB, RRGGBB or RRGGBBAA, "#" optional (default 000000)' },
        { name: 'bg', type: 'string', description: 'Background colour, same forms (default ffffff)' },
        { name: 'ecc', type: 'string', description: 'Error correction level: L, M (default), Q or H' },
        { name: 'size', type: 'integer', description: `Width and height in pixels, ${QR_SIZE.min}-${QR_SIZE.max} (default ${QR_SIZE.default}); at least one pixel per module` },
        { name: 'margin', type: 'integer', description: `Quiet zone in modules, ${QR_MARGIN.min}-${QR_MARGIN.max} (default ${QR_MARGIN.default})` },
        { name: 'raw', type: 'boolean', description: '1: answer with the image itself instead of JSON' },
      ],
      handler: async ({ params, caller }) => {
        const raw = wantsRaw(params.raw)
        // Each account renders in its own lane of the queue (a bounded share): see qr/renderer.ts.
        const image = await qr.generate(settingsOf(params), callerLane(caller?.accountId ?? 0))
        return raw ? imageResponse(image) : describe(image)
      },
    },
  ]
}
