// Request parameters: the query string for GET, the body for POST (form-encoded, multipart or JSON).
// Unknown parameters are ignored by the services; a parameter given twice: the last one wins.
import { AppError, tooLarge } from '../errors'

export type Params = Record<string, unknown>

export function queryParams(url: string): Params {
  const q = url.indexOf('?')
  const out: Params = Object.create(null)
  if (q < 0) return out
  for (const [k, v] of new URLSearchParams(url.slice(q + 1))) out[k] = v
  return out
}

/** Reads at most `limit` bytes of the body; a longer body is refused without reading it all. */
export async function readBodyLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit)
  if (!request.body) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = request.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel().catch(() => {})
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  const out = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

const malformed = (what: string) => new AppError(400, 'invalid_body', `The request body is not valid ${what}.`)

export async function bodyParams(request: Request, limit: number): Promise<Params> {
  const bytes = await readBodyLimited(request, limit)
  const out: Params = Object.create(null)
  if (bytes.byteLength === 0) return out
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
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
    return out
  }
  if (type === 'multipart/form-data') {
    let form: FormData
    try {
      form = await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { 'content-type': request.headers.get('content-type')! } }).formData()
    } catch {
      throw malformed('multipart/form-data')
    }
    form.forEach((v, k) => {
      out[k] = v
    })
    return out
  }
  // Form encoding is the documented default; a body without a content type is read as such too.
  for (const [k, v] of new URLSearchParams(text)) out[k] = v
  return out
}
