// How a signed download (a mail attachment, a media file) is named to the browser: always as a download,
// never shown inline, with the real name for clients that read RFC 6266 and a plain ASCII one for the rest.

/** `filename="…"` for old clients (ASCII, no quotes) and `filename*=` with the real name (RFC 6266). */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\%;]/g, '_') || 'download'
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`
}
