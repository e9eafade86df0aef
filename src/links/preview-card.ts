// What a link-preview crawler gets for a link with a social preview (SPEC §2a, §3): a small page of Open Graph and
// Twitter card tags instead of the redirect; and the preview's image, served from the short domain.
import { Elysia } from 'elysia'
import { isbot } from 'isbot'
import { escapeHtml } from '../web/render'
import { notFoundPage } from '../web/error-pages'
import { hasPreview, OG_PATH, ogImageUrl } from './preview'
import type { LinkRow } from './storage/contract'

/** The link previewers' own names, as their documents give them (each is in isbot's list too, today). */
const PREVIEWERS =
  /Slackbot-LinkExpanding|Slack-ImgProxy|Discordbot|facebookexternalhit|Facebot|Twitterbot|LinkedInBot|WhatsApp\/|TelegramBot|Mastodon\/|Applebot|redditbot|Pinterestbot|Embedly|SkypeUriPreview|vkShare|Iframely/i
/** HTTP libraries and command-line clients: isbot counts them as bots, but a script asks for the redirect. */
const CLIENTS =
  /^(?:curl|wget|python-requests|python-urllib|python-httpx|aiohttp|httpie|go-http-client|node-fetch|node|undici|axios|got|okhttp|java|apache-httpclient|libwww-perl|lwp|ruby|faraday|bun|deno|postmanruntime|insomnia|powershell|dart|reqwest)\b/i

/** A link-preview crawler: one of the named previewers, or any bot isbot knows but a plain HTTP client. */
export function isPreviewCrawler(ua: string): boolean {
  if (ua === '') return false
  if (PREVIEWERS.test(ua)) return true
  return isbot(ua) && !CLIENTS.test(ua)
}

/** Whether this visit is answered with the card: a crawler, a link with a preview and no password. */
export const wantsCard = (row: LinkRow, ua: string) =>
  row.password_hash === null && hasPreview(row) && isPreviewCrawler(ua)

const meta = (attr: 'property' | 'name', key: string, value: string) =>
  `<meta ${attr}="${key}" content="${escapeHtml(value)}">`

/** The card page: what the owner put in the preview, the short link, and a way on for a person who lands here. */
export function cardPage(row: LinkRow, base: string): Response {
  const short = `${base}/${row.code}`
  const image = ogImageUrl(base, row)
  const title = row.og_title || row.title || short
  const tags = [
    meta('property', 'og:type', 'website'),
    meta('property', 'og:url', short),
    meta('property', 'og:title', title),
    row.og_description ? meta('property', 'og:description', row.og_description) : '',
    image ? meta('property', 'og:image', image) : '',
    meta('name', 'twitter:card', image ? 'summary_large_image' : 'summary'),
    meta('name', 'twitter:title', title),
    row.og_description ? meta('name', 'twitter:description', row.og_description) : '',
    image ? meta('name', 'twitter:image', image) : '',
  ].filter(Boolean)
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
${row.og_description ? `<meta name="description" content="${escapeHtml(row.og_description)}">\n` : ''}${tags.join('\n')}
</head><body><h1>${escapeHtml(title)}</h1>${row.og_description ? `<p>${escapeHtml(row.og_description)}</p>` : ''}
<p><a href="${escapeHtml(row.long_url)}">Continue</a></p></body></html>
`
  return new Response(body, {
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'private, no-cache',
      'content-security-policy': "default-src 'none'; img-src *",
      'x-content-type-options': 'nosniff',
    },
  })
}

/** GET /_og/<code>/<version>.<ext>: the stored image when it is the link's current one; else 404. */
export function previewImageRoutes(deps: {
  /** The link of a code on the request's short domain (SPEC §13). */
  resolve: (code: string, request: Request) => LinkRow | null | Promise<LinkRow | null>
  image: (row: LinkRow) => Promise<{ version: string; type: string; bytes: Uint8Array } | null>
  /** Disabled and banned links show nothing (the gate's verdict). */
  stopped?: (row: LinkRow) => boolean
}) {
  return new Elysia({ name: 'preview-image' }).get(
    `/${OG_PATH}/:code/:file`,
    async ({ params, request }) => {
      const row = await deps.resolve(params.code, request)
      if (!row || row.og_image === null || row.og_image !== params.file || row.password_hash || deps.stopped?.(row))
        return notFoundPage()
      const image = await deps.image(row)
      if (!image || image.version !== row.og_image) return notFoundPage()
      return new Response(image.bytes as Uint8Array<ArrayBuffer>, {
        headers: {
          'content-type': image.type,
          // The address names the version: a new image is a new address.
          'cache-control': 'public, max-age=31536000, immutable',
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'",
        },
      })
    },
    { parse: 'none' },
  )
}
