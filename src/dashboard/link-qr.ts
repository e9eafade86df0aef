// A link's QR code on its dashboard page: a GET form of colours, size, error correction and margin (nothing is
// stored), a preview and PNG/SVG downloads drawn by the QR service in the caller's lane.
import { AppError } from '../kernel/errors'
import { contentDisposition } from '../web/disposition'
import { escapeHtml as e } from '../web/render'
import { uploadForm } from './upload-form'
import { LOGO_MAX_BYTES } from '../qr'
import { callerLane } from '../qr'
import { parseQrSettings, QR_ECC_LEVELS, QR_MARGIN, QR_SIZE, type QrFormat, type QrService } from '../qr'

/** The fields of the form, as the query string names them (the API's names). */
const FIELDS = ['fg', 'bg', 'size', 'ecc', 'margin'] as const
type Field = (typeof FIELDS)[number]
export type QrStyle = Record<Field, string>

const DEFAULTS: QrStyle = {
  fg: '000000',
  bg: 'ffffff',
  size: String(QR_SIZE.default),
  ecc: 'M',
  margin: String(QR_MARGIN.default),
}
const ECC_LABELS: Record<string, string> = { L: 'L — 7 %', M: 'M — 15 %', Q: 'Q — 25 %', H: 'H — 30 %' }
const FIELD_NAMES: Record<Field, string> = {
  fg: 'The foreground colour',
  bg: 'The background colour',
  size: 'The size',
  ecc: 'The error correction',
  margin: 'The margin',
}

/**
 * The style a page's URL asks for, each field checked on its own by the QR service's rules: a field that
 * breaks them keeps the default (and its message), so the others still show. Colours are opaque here (a
 * colour input has no alpha): an 8-digit one loses its alpha.
 */
export function styleOf(url: URL): { style: QrStyle; errors: Partial<Record<Field, string>> } {
  const style = { ...DEFAULTS }
  const errors: Partial<Record<Field, string>> = {}
  for (const name of FIELDS) {
    const value = url.searchParams.get(name)
    if (value === null || value === '') continue
    try {
      const s = parseQrSettings({ data: 'x', [name]: value.slice(0, 64) })
      const v = s[name]
      style[name] = typeof v === 'string' && (name === 'fg' || name === 'bg') ? v.slice(0, 6) : String(v)
    } catch (err) {
      if (!(err instanceof AppError)) throw err
      errors[name] = err.message.replace(/^The parameter "\w+"/, FIELD_NAMES[name])
    }
  }
  return { style, errors }
}

const queryOf = (style: QrStyle, extra: Record<string, string> = {}) =>
  new URLSearchParams({ ...style, ...extra }).toString()

/** The section of a link's page. `code` is a checked code, `shortUrl` the link's address, `csrf` the session's token. */
export function qrSection(code: string, shortUrl: string, url: URL, csrf: string): string {
  const { style, errors } = styleOf(url)
  const c = e(code)
  const image = `/dashboard/links/${c}/qr`
  const q = e(queryOf(style))
  /** A labelled control: `control` gets the attributes that tie it to its hint and its error. */
  const field = (name: Field, label: string, control: (attrs: string) => string, hint = '') => {
    const error = errors[name]
    const described = [hint ? `qr-${name}-hint` : '', error ? `qr-${name}-error` : ''].filter(Boolean).join(' ')
    const attrs = `id="qr-${name}" name="${name}"${described ? ` aria-describedby="${described}"` : ''}${error ? ' aria-invalid="true"' : ''}`
    return `<div class="field"><label for="qr-${name}">${label}</label>${control(attrs)}${hint ? `<span class="hint" id="qr-${name}-hint">${e(hint)}</span>` : ''}${error ? `<span class="error" id="qr-${name}-error">${e(error)}</span>` : ''}</div>`
  }
  const eccOptions = QR_ECC_LEVELS.map(
    (l) => `<option value="${l}"${style.ecc === l ? ' selected' : ''}>${e(ECC_LABELS[l]!)}</option>`,
  ).join('')
  return `<section class="card qr-style" id="qr-style" aria-labelledby="qr-style-heading">
<h2 id="qr-style-heading">QR code</h2>
<p class="muted">Colours, size and error correction of the code for <code>${e(shortUrl)}</code>. Nothing is saved: download the image you want.</p>
<div class="qr-style-layout">
<form method="get" action="/dashboard/links/${c}#qr-style" class="qr-style-form" data-qr-image="${image}" autocomplete="off">
<div class="form-grid">
${field('fg', 'Foreground', (a) => `<input ${a} type="color" value="#${e(style.fg)}">`)}
${field('bg', 'Background', (a) => `<input ${a} type="color" value="#${e(style.bg)}">`, 'Dark on light scans best.')}
${field('size', 'Size in pixels', (a) => `<input ${a} type="number" inputmode="numeric" min="${QR_SIZE.min}" max="${QR_SIZE.max}" step="1" required value="${e(style.size)}">`, `${QR_SIZE.min}–${QR_SIZE.max}`)}
${field('ecc', 'Error correction', (a) => `<select ${a}>${eccOptions}</select>`, 'Higher survives more damage, with more modules.')}
${field('margin', 'Margin in modules', (a) => `<input ${a} type="number" inputmode="numeric" min="${QR_MARGIN.min}" max="${QR_MARGIN.max}" step="1" required value="${e(style.margin)}">`, `${QR_MARGIN.min}–${QR_MARGIN.max}; 4 is the standard quiet zone`)}
</div>
<div class="actions"><button type="submit" class="secondary">Preview</button><a href="/dashboard/links/${c}#qr-style">Reset</a></div>
</form>
<figure class="qr-preview">
<img id="qr-preview" src="${image}.png?${q}" width="240" height="240" alt="Preview of the QR code for ${e(shortUrl)}">
<figcaption id="qr-status" aria-live="polite">${e(style.size)} × ${e(style.size)} pixels, error correction ${e(style.ecc)}</figcaption>
<p class="downloads">Download <a id="qr-png" class="button secondary small" aria-label="Download this QR code as PNG" href="${image}.png?${e(queryOf(style, { download: '1' }))}" download="${c}-qr.png">PNG</a> <a id="qr-svg" class="button secondary small" aria-label="Download this QR code as SVG" href="${image}.svg?${e(queryOf(style, { download: '1' }))}" download="${c}-qr.svg">SVG</a></p>
</figure>
</div>
<form method="post" action="${image}" enctype="multipart/form-data" class="qr-logo-form" aria-labelledby="qr-logo-heading">
<h3 id="qr-logo-heading">With a logo</h3>
<p class="muted">A PNG or SVG in the middle of the code, on a plate of the background colour; error correction is then H. The logo is used for this download only and not kept.</p>
<input type="hidden" name="_csrf" value="${e(csrf)}">
${FIELDS.map((name) => `<input type="hidden" name="${name}" value="${e(style[name])}" data-qr-copy="${name}">`).join('')}
<div class="form-grid">
<div class="field"><label for="qr-logo">Logo file</label><input id="qr-logo" name="logo" type="file" accept="image/png,image/svg+xml,.png,.svg" required aria-describedby="qr-logo-hint"><span class="hint" id="qr-logo-hint">PNG or SVG, at most ${LOGO_MAX_BYTES / 1024} KiB</span></div>
<div class="field"><label for="qr-logo-format">Format</label><select id="qr-logo-format" name="format"><option value="png">PNG</option><option value="svg">SVG</option></select></div>
</div>
<div class="actions"><button type="submit" class="secondary">Download with logo</button></div>
</form>
</section>`
}

// An SVG opened by itself runs nothing and loads nothing but its own embedded pixels.
const IMAGE_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox"

const plain = (status: number, text: string, headers: Record<string, string> = {}) =>
  new Response(text, {
    status,
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      ...headers,
    },
  })

/**
 * POST /dashboard/links/<code>/qr (multipart): the code with the uploaded logo, as a download — nothing is
 * stored, and the page stays where it is. A refused logo or setting goes back to the page (303) with the
 * reason as its notice, the settings kept in its URL.
 */
export async function qrWithLogo(
  qr: QrService,
  opts: {
    request: Request
    accountId: number
    csrf: string
    crossSite: boolean
    refused: () => AppError
    code: string
    shortUrl: string
  },
  back: (location: string, reason: string) => Response,
): Promise<Response> {
  const { request, code } = opts
  let form: FormData
  try {
    form = await uploadForm(request, { ...opts, fileMaxBytes: LOGO_MAX_BYTES })
  } catch (err) {
    if (err instanceof AppError && err.code === 'too_large')
      return back(
        `/dashboard/links/${code}#qr-style`,
        `The logo is larger than ${LOGO_MAX_BYTES / 1024} KiB: choose a smaller file.`,
      )
    throw err
  }
  const text = (name: string) => {
    const v = form.get(name)
    return typeof v === 'string' ? v : null
  }
  const style = Object.fromEntries(FIELDS.map((name) => [name, (text(name) ?? '').slice(0, 64)]))
  const format: QrFormat = text('format') === 'svg' ? 'svg' : 'png'
  const logo = form.get('logo')
  const page = `/dashboard/links/${code}?${new URLSearchParams(style)}#qr-style`
  if (!(logo instanceof Blob) || logo.size === 0)
    return back(page, 'Choose a logo file (PNG or SVG) to draw in the middle of the code.')
  try {
    const image = await qr.generate({ data: opts.shortUrl, format, ...style, logo }, callerLane(opts.accountId))
    return new Response(image.body, {
      headers: {
        'content-type': image.mime,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'content-security-policy': IMAGE_CSP,
        'content-disposition': contentDisposition(`${code}-qr-logo.${format}`),
      },
    })
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err
    const reason = err.message.replace(/^The parameter "(\w+)"/, (all, name: string) =>
      name === 'logo' ? 'The logo' : (FIELD_NAMES[name as Field] ?? all),
    )
    return back(page, reason)
  }
}

/**
 * The image of /dashboard/links/<code>/qr.<format>?fg&bg&size&ecc&margin[&download=1], for the signed-in
 * account's link: a 400 (text, for the page's script to show) when a value breaks the QR service's rules.
 */
export async function qrImage(
  qr: QrService,
  accountId: number,
  code: string,
  shortUrl: string,
  format: QrFormat,
  url: URL,
): Promise<Response> {
  const q = url.searchParams
  const input = {
    data: shortUrl,
    format,
    fg: q.get('fg'),
    bg: q.get('bg'),
    size: q.get('size'),
    ecc: q.get('ecc'),
    margin: q.get('margin'),
  }
  try {
    const image = await qr.generate(input, callerLane(accountId))
    const download = q.get('download') === '1'
    return new Response(image.body, {
      headers: {
        'content-type': image.mime,
        // It shows only the short address, but it is the account's page that asks: never a shared cache.
        'cache-control': 'private, max-age=300',
        'x-content-type-options': 'nosniff',
        'content-security-policy': IMAGE_CSP,
        ...(download ? { 'content-disposition': contentDisposition(`${code}-qr.${format}`) } : {}),
      },
    })
  } catch (err) {
    if (!(err instanceof AppError) || (err.status >= 500 && err.status !== 503)) throw err
    return plain(
      err.status,
      err.message.replace(/^The parameter "(\w+)"/, (all, name: string) => FIELD_NAMES[name as Field] ?? all),
      err.headers,
    )
  }
}
