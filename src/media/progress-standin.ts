// THROWAWAY STAND-IN for GET /dl/<id>/progress (issue 41): helper A builds the real route; at that merge the
// integrator deletes this file and its one line in feature.ts. It follows the brief's progress contract.
import { Elysia } from 'elysia'
import { AppError } from '../kernel/errors'
import { queryParams } from '../web/params'
import type { MediaService } from './service'

export function progressStandin(media: MediaService, base: string) {
  return new Elysia({ name: 'media-progress-standin' }).get('/dl/:id/progress', async ({ params, request }) => {
    const query = queryParams(request.url)
    const text = (v: unknown) => (typeof v === 'string' ? v : null)
    // Checked as /dl checks it (403, 410, 404 in the JSON envelope) before any stream starts.
    const t = await media.ticket(params.id, text(query.exp), text(query.sig))
    const link = `${base}/dl/${t.id}?exp=${text(query.exp)}&sig=${text(query.sig)}`
    const encoder = new TextEncoder()
    const stream = new ReadableStream<Uint8Array>({
      async start(c) {
        const send = (event: string, data: unknown) => {
          try {
            c.enqueue(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`))
          } catch {}
        }
        const progress = (step: string, bytes: number, total: number | null) =>
          send('progress', {
            step,
            bytes,
            total,
            speed: null,
            percent: total ? Math.round((bytes / total) * 100) : null,
          })
        let tick: ReturnType<typeof setInterval> | undefined
        try {
          if (t.method === 'ytdlp') {
            progress('queued', 0, null)
            tick = setInterval(() => progress('downloading', 0, null), 500)
            // The cache fetch /dl would do (a HEAD waits for it and sends nothing).
            const head = await media.serve(t, new Request(link, { method: 'HEAD', signal: request.signal }))
            const size = Number(head.headers.get('content-length') ?? 0)
            progress('downloading', size, size || null)
          }
          send('ready', { url: link })
        } catch (err) {
          const known = err instanceof AppError
          send('failed', {
            code: known ? err.code : 'upstream_failed',
            message: known ? err.message : 'The file could not be prepared.',
          })
        } finally {
          clearInterval(tick)
          try {
            c.close()
          } catch {}
        }
      },
    })
    return new Response(stream, {
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' },
    })
  })
}
