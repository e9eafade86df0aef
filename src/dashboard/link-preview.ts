// A link's social preview on its dashboard page (issue 40): the title, description and image a link-preview crawler
// is shown, in a multipart form of its own (Post/Redirect/Get, the session's CSRF token), beside the card as it
// will look; assets/app-preview.js redraws the card as the fields are typed.
import { AppError } from '../kernel/errors'
import {
  type LinkRecord,
  type LinkService,
  MAX_OG_DESCRIPTION_LENGTH,
  MAX_OG_TITLE_LENGTH,
  OG_IMAGE_MAX_BYTES,
} from '../links'
import type { Caller } from '../kernel/caller'
import { escapeHtml as e } from '../web/render'
import { uploadForm } from './upload-form'

const NAMES: Record<string, string> = {
  og_title: 'The preview title',
  og_description: 'The preview description',
  og_image: 'The image',
}

/** The card as Slack, X or Facebook draw it: the image (if any), the short link's host, the title and description. */
function card(r: LinkRecord): string {
  const host = new URL(r.url).host
  const title = r.og_title || r.title || r.url
  // Shown from the dashboard's own origin: the path of the image's address.
  const image = r.og_image ? new URL(r.og_image).pathname : ''
  return `<figure class="og-card" data-og-card aria-labelledby="og-card-caption">
<div class="og-card-image"${image ? '' : ' hidden'}><img data-og-card-image src="${e(image)}" alt=""></div>
<div class="og-card-text"><span class="og-card-host">${e(host)}</span>
<strong class="og-card-title" data-og-card-title data-fallback="${e(r.title || r.url)}">${e(title)}</strong>
<span class="og-card-description" data-og-card-description>${e(r.og_description)}</span></div>
<figcaption id="og-card-caption" class="muted">How the link will look when it is shared</figcaption>
</figure>`
}

/** The section of a link's edit page (ids: og_title, og_description, og_image, og_remove); `ref` its name in paths. */
export function previewSection(r: LinkRecord, csrf: string, ref: string): string {
  const c = e(ref)
  return `<section class="card og-preview" id="social-preview" aria-labelledby="og-heading">
<h2 id="og-heading">Social preview</h2>
<p class="muted">What Slack, Discord, Facebook, X, LinkedIn, WhatsApp, Telegram, Mastodon and iMessage show for this link. People who open it still go straight to the destination.${r.password ? ' This link has a password: no preview is shown for it.' : ''}</p>
<div class="og-layout">
<form method="post" action="/dashboard/links/${c}/preview" enctype="multipart/form-data" class="stack" data-og-form>
<input type="hidden" name="_csrf" value="${e(csrf)}">
<div class="field"><label for="og_title">Preview title <span class="optional">(optional)</span></label>
<input id="og_title" name="og_title" autocomplete="off" maxlength="${MAX_OG_TITLE_LENGTH}" value="${e(r.og_title)}" aria-describedby="og_title-hint">
<span class="hint" id="og_title-hint">Up to ${MAX_OG_TITLE_LENGTH} characters; the link's title when empty.</span></div>
<div class="field"><label for="og_description">Preview description <span class="optional">(optional)</span></label>
<textarea id="og_description" name="og_description" rows="3" maxlength="${MAX_OG_DESCRIPTION_LENGTH}" aria-describedby="og_description-hint">${e(r.og_description)}</textarea>
<span class="hint" id="og_description-hint">Up to ${MAX_OG_DESCRIPTION_LENGTH} characters.</span></div>
<div class="field"><label for="og_image">${r.og_image ? 'Replace the image' : 'Image'} <span class="optional">(optional)</span></label>
<input id="og_image" name="og_image" type="file" accept="image/png,image/jpeg,image/webp,.png,.jpg,.jpeg,.webp" aria-describedby="og_image-hint">
<span class="hint" id="og_image-hint">PNG, JPEG or WebP, at most ${OG_IMAGE_MAX_BYTES / 1048576} MiB; stored at most 1200×630 pixels, without its metadata.</span></div>
${r.og_image ? '<label class="choice"><input type="checkbox" id="og_remove" name="og_remove" value="1"> Remove the image</label>' : ''}
<div class="actions"><button type="submit">Save card</button></div>
</form>
${card(r)}
</div>
</section>`
}

/**
 * POST /dashboard/links/<code>/preview: the preview saved through the link service (the same checks and
 * re-encoding as update.json), then 303 back to the page's section with what happened.
 */
export async function savePreview(
  links: LinkService,
  opts: {
    request: Request
    caller: Caller
    csrf: string
    crossSite: boolean
    refused: () => AppError
    code: string
    /** The link's short domain, and its name in the dashboard's paths (code@host on another domain). */
    domain: string
    ref: string
  },
  back: (location: string, notice: { kind: 'ok' | 'error'; text: string }) => Response,
): Promise<Response> {
  const page = `/dashboard/links/${opts.ref}#social-preview`
  let form: FormData
  try {
    form = await uploadForm(opts.request, { ...opts, fileMaxBytes: OG_IMAGE_MAX_BYTES })
  } catch (err) {
    if (err instanceof AppError && err.code === 'too_large')
      return back(page, {
        kind: 'error',
        text: `The image is larger than ${OG_IMAGE_MAX_BYTES / 1048576} MiB: choose a smaller file.`,
      })
    throw err
  }
  const text = (name: string) => {
    const v = form.get(name)
    return typeof v === 'string' ? v : ''
  }
  const file = form.get('og_image')
  const image = file instanceof Blob && file.size > 0 ? file : text('og_remove') === '1' ? '' : undefined
  try {
    await links.update(
      {
        code: opts.code,
        domain: opts.domain,
        og_title: text('og_title'),
        og_description: text('og_description'),
        og_image: image,
      },
      opts.caller,
    )
  } catch (err) {
    if (!(err instanceof AppError) || (err.status >= 500 && err.status !== 503)) throw err
    const reason = err.message.replace(/^The parameter "(\w+)"/, (all, name: string) => NAMES[name] ?? all)
    return back(page, { kind: 'error', text: reason })
  }
  return back(page, { kind: 'ok', text: 'Saved the social preview.' })
}
