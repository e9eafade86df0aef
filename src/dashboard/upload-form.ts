// A dashboard form with a file (a QR logo, a preview image): a multipart body of at most the file and a form's
// worth more, from this site, carrying the session's token; anything else is the form's refusal.
import type { AppError } from '../kernel/errors'
import { sameSecret } from '../web/api'
import { readBodyLimited } from '../web/params'

export async function uploadForm(
  request: Request,
  opts: { csrf: string; crossSite: boolean; refused: () => AppError; fileMaxBytes: number },
): Promise<FormData> {
  if (opts.crossSite) throw opts.refused()
  const bytes = await readBodyLimited(request, opts.fileMaxBytes + 64 * 1024)
  let form: FormData
  try {
    form = await new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: { 'content-type': request.headers.get('content-type') ?? '' },
    }).formData()
  } catch {
    throw opts.refused()
  }
  const token = form.get('_csrf')
  if (typeof token !== 'string' || !sameSecret(token, opts.csrf)) throw opts.refused()
  return form
}
