// The Mailboxes section's live view: an event stream of the rows of new messages in an open mailbox page.
import type { DashboardDeps } from './deps'
import { AppError } from '../kernel/errors'
import { KEEPALIVE_MS, messageRow, MESSAGES_SHOWN, missing } from './mail-view'

export function createMailEvents({ shell, mail, server }: DashboardDeps) {
  /**
   * GET /dashboard/mail/<address>/events: text/event-stream for the signed-in owner. On connecting (and
   * on reconnecting, from Last-Event-ID) it sends the messages newer than the page's newest, then each new
   * one as it is stored: `event: mail` with `{messages: [{id, html}], unread, count}` (html: messageRow's
   * markup). `event: gone` when the mailbox is deleted or expires; the stream ends then, when the session
   * ends, and when the server stops (the browser connects again by itself). Bounded by mail.watch.
   */
  async function events(request: Request, address: string): Promise<Response> {
    const plain = (status: number, text: string, headers: Record<string, string> = {}) =>
      new Response(text, {
        status,
        headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers },
      })
    const s = await shell.session(request)
    if (!s) return plain(401, 'Sign in first.')
    const given = request.headers.get('last-event-id') ?? new URL(request.url).searchParams.get('after') ?? '0'
    let after = /^[0-9]{1,15}$/.test(given) ? Number(given) : 0
    const encoder = new TextEncoder()
    let controller: ReadableStreamDefaultController<Uint8Array> | null = null
    let closed = false
    let keepAlive: ReturnType<typeof setInterval> | undefined
    let queue = Promise.resolve()
    let watching: Awaited<ReturnType<typeof mail.watch>> | null = null

    const write = (text: string) => {
      if (closed || !controller) return
      try {
        controller.enqueue(encoder.encode(text))
      } catch {
        finish()
      }
    }
    const finish = () => {
      if (closed) return
      closed = true
      clearInterval(keepAlive)
      watching?.stop()
      request.signal.removeEventListener('abort', finish)
      try {
        controller?.close()
      } catch {}
    }
    const gone = () => {
      write('event: gone\ndata: {}\n\n')
      finish()
    }
    /** The messages newer than the last one sent (read again each time: nothing is missed or sent twice). */
    const sendNew = async () => {
      if (closed) return
      if (!(await shell.session(request))) return finish() // signed out meanwhile
      try {
        const list = await mail.listMessages(s.caller, { address, after, limit: MESSAGES_SHOWN })
        if (list.messages.length === 0) return
        after = list.messages[0]!.id
        const data = {
          messages: list.messages.map((m) => ({ id: m.id, html: messageRow(list.address, m) })),
          unread: await mail.unread(s.caller, list.address),
          count: (await mail.mailbox(s.caller, list.address)).messages,
        }
        write(`id: ${after}\nevent: mail\ndata: ${JSON.stringify(data)}\n\n`)
      } catch (err) {
        if (missing(err)) return gone()
        throw err
      }
    }
    const next = () => {
      queue = queue.then(sendNew).catch(() => finish())
    }
    try {
      watching = await mail.watch(s.caller, address, (e) => (e === 'mail' ? next() : e === 'gone' ? gone() : finish()))
    } catch (err) {
      if (missing(err)) return plain(404, 'Not found')
      if (err instanceof AppError && err.status === 503) return plain(503, err.message, err.headers)
      throw err
    }
    // Held open past the server's idle timeout (Bun's idle timer does not count what is written): the
    // keep-alive comments are for proxies and the browser, and a peer that is gone shows itself when one
    // cannot be written. The streams are bounded (mail.watch), so a dead one holds a slot, not the server.
    try {
      server?.()?.timeout(request, 0)
    } catch {} // a request that did not come through the listening server (tests' app.handle)
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        controller = c
        if (closed) return void c.close() // the request went away while its mailbox was being looked up
        write(': linkbox mail\nretry: 3000\n\n')
        next() // what arrived between the page and this stream
        keepAlive = setInterval(async () => {
          if (!(await shell.session(request).catch(() => null))) return finish()
          write(': keep-alive\n\n')
        }, KEEPALIVE_MS)
      },
      cancel: finish,
    })
    request.signal.addEventListener('abort', finish, { once: true })
    if (request.signal.aborted) finish()
    return new Response(stream, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        // No proxy buffering (nginx): each event is sent as it is written.
        'x-accel-buffering': 'no',
      },
    })
  }
  return events
}
