// Request parameters: the query string for GET, the body for POST (form-encoded, multipart or JSON).
// Unknown parameters are ignored by the services; a parameter given twice: the last one wins.
import { isUtf8 } from 'node:buffer'
import { AppError, tooLarge } from '../kernel/errors'

export type Params = Record<string, unknown>

export function queryParams(url: string): Params {
  const q = url.indexOf('?')
  const out: Params = Object.create(null)
  if (q < 0) return out
  for (const [k, v] of formPairs(url.slice(q + 1), 'query string')) out[k] = v
  return out
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const isHex = (b: number | undefined) =>
  b !== undefined && ((b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66))

/** Percent-decodes one form component like URLSearchParams ("+" is a space, a stray "%" stays), except that
 *  bytes which are not UTF-8 give null instead of silently becoming U+FFFD. */
function formComponent(s: string): string | null {
  s = s.replaceAll('+', ' ')
  if (!s.includes('%')) return s
  // The usual case, at a fraction of the cost: decodeURIComponent succeeds only when every "%" starts an escape
  // and the escaped bytes are UTF-8 (the same rules as the fatal decoder), and then gives what the loop below gives.
  try {
    return decodeURIComponent(s)
  } catch {}
  const bytes = new TextEncoder().encode(s)
  const out = new Uint8Array(bytes.length)
  let n = 0
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!
    if (b === 0x25 && isHex(bytes[i + 1]) && isHex(bytes[i + 2])) {
      out[n++] = parseInt(String.fromCharCode(bytes[i + 1]!, bytes[i + 2]!), 16)
      i += 2
    } else out[n++] = b
  }
  try {
    return strictUtf8.decode(out.subarray(0, n))
  } catch {
    return null
  }
}

function formPairs(text: string, where: string): [string, string][] {
  const pairs: [string, string][] = []
  for (const part of text.split('&')) {
    if (part === '') continue
    const eq = part.indexOf('=')
    const key = formComponent(eq < 0 ? part : part.slice(0, eq))
    if (key === null)
      throw new AppError(400, 'invalid_parameter', `A parameter name in the ${where} is not valid UTF-8.`)
    const value = formComponent(eq < 0 ? '' : part.slice(eq + 1))
    if (value === null)
      throw new AppError(
        400,
        'invalid_parameter',
        `The parameter "${key.slice(0, 64)}" is not valid UTF-8 once percent-decoded.`,
      )
    pairs.push([key, value])
  }
  return pairs
}

/**
 * Reads at most `limit` bytes of the body; a longer body is refused without reading it all.
 *
 * With a Content-Length (what clients send for a form), HTTP framing bounds the body: it is checked against
 * the limit and read in one piece. A client that stops sending is cut off by the server's idle timeout
 * (app.ts listen), which closes the connection; the read then fails with an AbortError, so nothing waits
 * forever. A body without a length (chunked) can be any size, so it is read piece by piece and refused as
 * soon as it passes the limit, and, since each piece resets the idle timeout, within `deadlineMs` in all.
 */
export async function readBodyLimited(request: Request, limit: number, deadlineMs = 15_000): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && /^\s*\d{1,15}\s*$/.test(declared)) {
    if (Number(declared) > limit) throw tooLarge(limit)
    const bytes = new Uint8Array(await request.arrayBuffer())
    // A Request built in this process may carry a length that is not its body's.
    if (bytes.byteLength > limit) throw tooLarge(limit)
    return bytes
  }
  return readStreamLimited(request, limit, deadlineMs)
}

async function readStreamLimited(request: Request, limit: number, deadlineMs: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = request.body.getReader()
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new AppError(408, 'timeout', `The request body did not arrive within ${deadlineMs / 1000} s.`)),
      deadlineMs,
    )
  })
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), deadline])
      if (done) break
      total += value.byteLength
      if (total > limit) throw tooLarge(limit)
      chunks.push(value)
    }
  } catch (err) {
    await reader.cancel().catch(() => {})
    throw err
  } finally {
    clearTimeout(timer)
  }
  const out = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

// A body's text: UTF-8 or refused (a byte order mark dropped). decode() without `stream` keeps no state between calls.
const utf8Body = new TextDecoder('utf-8', { fatal: true })
const malformed = (what: string) => new AppError(400, 'invalid_body', `The request body is not valid ${what}.`)

/** What a method that takes a file declares (ApiMethod.upload). */
export interface Upload {
  param: string
  limit: number
  types: string[]
}
/** Room for a multipart envelope (boundaries, headers, the other fields) around an uploaded file. */
const UPLOAD_SLACK = 64 * 1024
const fileTooLarge = (upload: Upload) =>
  new AppError(
    413,
    'too_large',
    `The parameter "${upload.param}" is larger than the limit of ${upload.limit} bytes (${upload.limit / 1048576} MiB).`,
  )

/** A file's bytes as UTF-8 text (a byte order mark dropped); other bytes are a 400 naming the parameter. */
function fileText(bytes: Uint8Array, upload: Upload): string {
  if (bytes.byteLength > upload.limit) throw fileTooLarge(upload)
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new AppError(400, 'invalid_parameter', `The parameter "${upload.param}" is not UTF-8 text.`)
  }
}

/** A file sent as a form or JSON field is held to the same limit as one sent as a file. */
function checkFileSize(out: Params, upload: Upload | undefined): Params {
  const file = upload ? out[upload.param] : undefined
  if (upload && typeof file === 'string' && Buffer.byteLength(file) > upload.limit) throw fileTooLarge(upload)
  return out
}

export async function bodyParams(request: Request, limit: number, upload?: Upload): Promise<Params> {
  let bytes: Uint8Array
  try {
    bytes = await readBodyLimited(request, upload ? upload.limit + UPLOAD_SLACK : limit)
  } catch (err) {
    if (upload && err instanceof AppError && err.code === 'too_large') throw fileTooLarge(upload)
    throw err
  }
  const out: Params = Object.create(null)
  if (bytes.byteLength === 0) return out
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (upload?.types.includes(type)) {
    out[upload.param] = fileText(bytes, upload)
    return out
  }
  // A multipart body may carry a file (qr.json's logo), whose bytes are anything: only its text fields
  // must be UTF-8, which a body without files shows by being UTF-8 as a whole (checked only then: a 10 MiB
  // import was decoded whole for nothing, ~10 ms of the event loop).
  if (type === 'multipart/form-data') {
    const params = await multipartParams(request, bytes, () => isUtf8(bytes))
    // A file field of a method that takes one as text (import.json's CSV) is its text; other files stay as they are.
    const file = upload ? params[upload.param] : undefined
    if (upload && file instanceof Blob) {
      // A large file was just parsed out of the body: the event loop turns (redirects waiting) before it is decoded.
      if (file.size > 1024 * 1024) await new Promise<void>((resolve) => setImmediate(resolve))
      params[upload.param] = fileText(new Uint8Array(await file.arrayBuffer()), upload)
    }
    return checkFileSize(params, upload)
  }
  let text: string
  try {
    text = utf8Body.decode(bytes)
  } catch {
    throw malformed('UTF-8')
  }
  if (type === 'application/json' || type.endsWith('+json')) {
    let doc: unknown
    try {
      doc = JSON.parse(text)
    } catch {
      throw malformed('JSON')
    }
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
      throw new AppError(400, 'invalid_body', 'A JSON body must be an object of parameters.')
    for (const [k, v] of Object.entries(doc)) out[k] = v
    return checkFileSize(out, upload)
  }
  // Form encoding is the documented default; a body without a content type is read as such too.
  for (const [k, v] of formPairs(text, 'request body')) out[k] = v
  return checkFileSize(out, upload)
}

/** Text fields as strings, files as File objects (an empty file with no name — a form's file input left blank — is absent). */
async function multipartParams(request: Request, bytes: Uint8Array, utf8: () => boolean): Promise<Params> {
  let form: FormData
  try {
    form = await new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: { 'content-type': request.headers.get('content-type')! },
    }).formData()
  } catch {
    throw malformed('multipart/form-data')
  }
  const out: Params = Object.create(null)
  let files = false
  form.forEach((v, k) => {
    if (typeof v === 'string') out[k] = v
    else if (v.size > 0 || ((v as Partial<File>).name ?? '') !== '') {
      out[k] = v
      files = true
    }
  })
  if (!files && !utf8()) throw malformed('UTF-8')
  return out
}
