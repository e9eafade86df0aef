// GET/POST /api/qr.json: the parameters and the answer declared once as schemas (requests and API documents);
// the image described in the envelope, or itself with raw=1; POST may carry a `logo` file (logo.ts).
import { Type } from '@sinclair/typebox'
import { invalidParameter } from '../kernel/errors'
import type { ApiFile, ApiMethod } from '../web/api'
import type { Params } from '../web/params'
import type { ApiParam } from '../web/schema'
import { LOGO_MAX_BYTES, LOGO_MAX_SIDE, SVG_MAX_ELEMENTS } from './logo'
import { callerLane, RENDER_DEADLINE_MS } from './renderer'
import {
  QR_CAPACITY,
  QR_ECC_LEVELS,
  QR_FORMATS,
  QR_MARGIN,
  QR_MIME,
  QR_SIZE,
  type QrImage,
  type QrService,
} from './service'

// The same parameters give the same image, but the request carries a key and is rate limited: only
// the caller's own browser may keep it, never a shared cache.
const RAW_CACHE_CONTROL = 'private, max-age=86400'

/** raw=1/true: the image; raw=0/false or absent: the envelope (a JSON body's true and false too). */
function wantsRaw(value: unknown): boolean {
  if (value === undefined || value === '' || value === '0' || value === 'false' || value === false) return false
  if (value === '1' || value === 'true' || value === true) return true
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

const settingsOf = (p: Params) => ({
  data: p.data,
  format: p.format,
  fg: p.fg,
  bg: p.bg,
  ecc: p.ecc,
  size: p.size,
  margin: p.margin,
})

const rule = (name: string, text: string) => invalidParameter(name, text).message
const absent = ['', null] as const

const COLOUR_RULE = 'it must be a hex colour of 3, 6 or 8 digits (RGB, RRGGBB or RRGGBBAA), "#" optional'
function colourParam(name: 'fg' | 'bg', fallback: string, what: string): ApiParam {
  return {
    name,
    absent,
    schema: Type.String({
      pattern: '^#?([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$',
      default: fallback,
      description: `${what} colour: RGB, RRGGBB or RRGGBBAA in hex, "#" optional`,
      examples: [name === 'fg' ? '#1a237e' : 'ffffff'],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { type: rule(name, 'it must be a string'), default: rule(name, COLOUR_RULE) },
    },
  }
}

function wholeParam(
  name: 'size' | 'margin',
  range: { min: number; max: number; default: number },
  unit: string,
  what: string,
): ApiParam {
  return {
    name,
    absent,
    schema: Type.Integer({
      minimum: range.min,
      maximum: range.max,
      default: range.default,
      description: what,
      examples: [range.default],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { default: rule(name, `it must be a whole number of ${unit} from ${range.min} to ${range.max}`) },
    },
  }
}

function oneOfParam(
  name: 'format' | 'ecc',
  members: readonly string[],
  fallback: string,
  what: string,
  example: string,
): ApiParam {
  return {
    name,
    absent,
    caseInsensitive: true,
    schema: Type.String({
      enum: [...members],
      default: fallback,
      description: `${what} (any letter case)`,
      examples: [example],
    }),
    error: {
      code: 'invalid_parameter',
      messages: {
        type: rule(name, 'it must be a string'),
        default: rule(name, `it must be one of ${members.join(', ')}`),
      },
    },
  }
}

const capacity = Object.entries(QR_CAPACITY)
  .map(([ecc, c]) => `${c.bytes} bytes at ecc ${ecc}`)
  .join(', ')

const QR_PARAMS: ApiParam[] = [
  {
    name: 'data',
    required: true,
    absent,
    schema: Type.String({
      minLength: 1,
      description: `Text to encode (UTF-8); at most ${capacity} (more if only digits or A-Z 0-9 $%*+-./: and space)`,
      // Short enough for the smallest size at the default margin (version 1: 29 modules, 58 px).
      examples: ['hello, world'],
    }),
    error: { code: 'invalid_parameter', messages: { default: rule('data', 'it must be a string') } },
  },
  oneOfParam('format', QR_FORMATS, 'png', 'Image format', 'svg'),
  colourParam('fg', '000000', 'Foreground'),
  colourParam('bg', 'ffffff', 'Background'),
  oneOfParam('ecc', QR_ECC_LEVELS, 'M', 'Error correction level: L 7 %, M 15 %, Q 25 %, H 30 %', 'Q'),
  wholeParam(
    'size',
    QR_SIZE,
    'pixels',
    'Width and height in pixels; at least two pixels per module (a smaller size is refused naming the smallest that works)',
  ),
  wholeParam('margin', QR_MARGIN, 'modules', 'Quiet zone around the symbol, in modules'),
  {
    name: 'raw',
    absent,
    schema: Type.Boolean({
      default: false,
      description: 'true or 1: answer with the image itself (its content type) instead of JSON; false or 0: JSON',
      examples: [true],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { default: rule('raw', 'it must be 1 (the image itself) or 0 (the JSON answer)') },
    },
  },
]

const QrJsonSchema = Type.Object(
  {
    format: Type.String({ enum: [...QR_FORMATS] }),
    mime: Type.String({ enum: Object.values(QR_MIME) }),
    size: Type.Integer({ minimum: QR_SIZE.min, maximum: QR_SIZE.max, description: 'Width and height in pixels' }),
    ecc: Type.String({ enum: [...QR_ECC_LEVELS] }),
    fg: Type.String({
      pattern: '^([0-9a-f]{6}|[0-9a-f]{8})$',
      description: 'Lower-case hex; 8 digits only when not opaque',
    }),
    bg: Type.String({ pattern: '^([0-9a-f]{6}|[0-9a-f]{8})$' }),
    margin: Type.Integer({ minimum: QR_MARGIN.min, maximum: QR_MARGIN.max }),
    data_uri: Type.String({
      pattern: '^data:image/(png|svg\\+xml);base64,[A-Za-z0-9+/]*={0,2}$',
      description: 'The image as a data: URI',
    }),
    svg: Type.Optional(Type.String({ description: 'The SVG markup (format svg only)' })),
  },
  {
    title: 'QrCode',
    additionalProperties: false,
    examples: [
      {
        format: 'svg',
        mime: 'image/svg+xml',
        size: 300,
        ecc: 'M',
        fg: '000000',
        bg: 'ffffff',
        margin: 4,
        data_uri: 'data:image/svg+xml;base64,PHN2Zy8+',
        svg: '<svg/>',
      },
    ],
  },
)

const LOGO: ApiFile = {
  name: 'logo',
  maxBytes: LOGO_MAX_BYTES,
  types: ['image/png', 'image/svg+xml'],
  description:
    `A PNG or SVG drawn in the middle, on a plate of the background colour about a fifth of the code wide; ` +
    `error correction is then H (the answer says so). Recognised by its bytes, whatever its part's type; a PNG ` +
    `at most ${LOGO_MAX_SIDE}×${LOGO_MAX_SIDE} pixels; an SVG is rebuilt from its shapes, paths, groups, gradients, ` +
    `clip paths and text (images, patterns, filters, masks and references to anything outside it are dropped; ` +
    `text is not drawn), at most ${SVG_MAX_ELEMENTS} elements drawn and ${RENDER_DEADLINE_MS / 1000} s to draw`,
}

export function qrApi(qr: QrService): ApiMethod[] {
  const common = {
    path: '/api/qr.json',
    key: 'required',
    scope: 'qr',
    marketplace: true,
    tag: 'qr',
    params: QR_PARAMS,
    returns: QrJsonSchema,
    otherContent: { description: 'With raw=1: the image itself', types: Object.values(QR_MIME) },
    errors: { 503: ['busy'] },
  } satisfies Partial<ApiMethod>
  return [
    {
      ...common,
      verb: 'GET',
      summary: 'Generate a QR code (PNG or SVG) for a text or address',
      description:
        'A short link has its QR code already, at the public address `/qr/<code>.png` (`.svg` too) that opens without a key: ' +
        'the `qr` of its record. This method draws any text, in the colours, size and error correction asked for.',
      handler: async ({ params, caller }) => {
        const raw = wantsRaw(params.raw)
        // Each account renders in its own lane of the queue (a bounded share): see qr/renderer.ts.
        const image = await qr.generate(settingsOf(params), callerLane(caller?.accountId ?? 0))
        return raw ? imageResponse(image) : describe(image)
      },
    },
    {
      ...common,
      verb: 'POST',
      operationId: 'qrPost',
      summary: 'Generate a QR code (PNG or SVG), optionally with a logo in the middle',
      description:
        'The fields of GET qr.json in a form, multipart or JSON body; a multipart body may add `logo`, a PNG or SVG ' +
        `file of at most ${LOGO_MAX_BYTES / 1024} KiB drawn in the middle of the code, which then has error correction H.`,
      files: [LOGO],
      handler: async ({ params, caller }) => {
        const raw = wantsRaw(params.raw)
        const image = await qr.generate(
          { ...settingsOf(params), logo: params.logo },
          callerLane(caller?.accountId ?? 0),
        )
        return raw ? imageResponse(image) : describe(image)
      },
    },
  ]
}
