// A forward HTTP proxy on 127.0.0.1 for yt-dlp (which resolves names itself): every request and CONNECT tunnel
// is checked with the guard's checkUrl and goes to the checked address; credentials made at start keep others out.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Socket } from 'node:net'
import { GuardError, checkUrl, type GuardOptions } from './guard'

export interface GuardProxy {
  /** `http://<user>:<pass>@127.0.0.1:<port>`: a secret; pass it through the environment only. */
  url: string
  port: number
  /** Client connections open now. */
  connections(): number
  stop(): Promise<void>
}

export interface GuardProxyOptions {
  allowPrivate: boolean
  resolve?: (host: string) => Promise<string[]>
  /** Default 64; a client past it gets 503. */
  maxConnections?: number
  /** DNS, the check and the TCP connect to upstream together; default 10 s. */
  connectTimeoutMs?: number
  /** A connection with no bytes either way for this long is closed; default 120 s. */
  idleTimeoutMs?: number
  /** Tests only, as GuardOptions.isAllowed: which addresses count as public. */
  isAllowed?: (address: string) => boolean
}

const MAX_HEAD_BYTES = 16 * 1024
// A client gets this long to send its request head at all (a slow drip would dodge the idle timeout).
const HEAD_TIMEOUT_MS = 15_000
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'upgrade',
  'host',
])

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  407: 'Proxy Authentication Required',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
}

/** A short answer from the proxy itself, then the connection ends. Nothing from input goes into it. */
function refuse(client: Socket, status: number, text: string, extra: Record<string, string> = {}): void {
  if (client.destroyed) return
  const body = `${text}\n`
  // A refusal of the guard says so in its status line: that line is all yt-dlp repeats in its error
  // ("HTTP Error 403: …", "Tunnel connection failed: 403 …"), and the media service tells a private address
  // from a site's own 403 by it.
  const phrase = extra['X-Linkbox-Guard']
    ? `${REASONS[status] ?? 'Error'} by linkbox-guard (${extra['X-Linkbox-Guard']})`
    : (REASONS[status] ?? 'Error')
  const head = [
    `HTTP/1.1 ${status} ${phrase}`,
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(extra).map(([k, v]) => `${k}: ${v}`),
  ].join('\r\n')
  client.end(`${head}\r\n\r\n${body}`)
}

interface Head {
  method: string
  target: string
  headers: [string, string][]
}

function parseHead(text: string): Head | null {
  const lines = text.split('\r\n')
  const m = /^(\S+) (\S+) HTTP\/1\.[01]$/.exec(lines[0] ?? '')
  if (!m || !TOKEN.test(m[1]!)) return null
  const headers: [string, string][] = []
  for (const line of lines.slice(1)) {
    // No obsolete line folding, no bare CR or LF, no NUL: whatever we pass on must mean one thing.
    const h = /^([^:\s]+):[ \t]*([^\r\n\0]*?)[ \t]*$/.exec(line)
    if (!h || !TOKEN.test(h[1]!)) return null
    headers.push([h[1]!, h[2]!])
  }
  return { method: m[1]!, target: m[2]!, headers }
}

const digest = (text: string) => createHash('sha256').update(text).digest()

export async function startGuardProxy(opts: GuardProxyOptions): Promise<GuardProxy> {
  // Loaded here, at the first download, not with the app: node:net brings node's streams (~4 ms of serve's start).
  const { connect, createServer } = await import('node:net')
  const maxConnections = opts.maxConnections ?? 64
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000
  const idleTimeoutMs = opts.idleTimeoutMs ?? 120_000
  const user = randomBytes(8).toString('hex')
  const pass = randomBytes(16).toString('hex')
  const expected = digest(`Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`)
  const guard: GuardOptions = {
    allowPrivate: opts.allowPrivate,
    resolve: opts.resolve,
    isAllowed: opts.isAllowed,
    timeoutMs: connectTimeoutMs,
  }
  const clients = new Set<Socket>()
  // Upstream sockets and refused clients: not counted against maxConnections, but stop() ends them too.
  const otherSockets = new Set<Socket>()

  /** Connects to the first of the checked addresses that answers, within what is left of the deadline. */
  function dial(addresses: string[], port: number, deadline: number): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const attempt = (i: number) => {
        const left = deadline - Date.now()
        if (left <= 0) return reject(new GuardError('timeout', 'upstream did not answer in time'))
        const socket = connect({ host: addresses[i]!, port })
        otherSockets.add(socket)
        socket.once('close', () => otherSockets.delete(socket))
        const timer = setTimeout(() => {
          socket.destroy()
          reject(new GuardError('timeout', 'upstream did not answer in time'))
        }, left)
        socket.once('connect', () => {
          clearTimeout(timer)
          socket.removeAllListeners('error')
          resolve(socket)
        })
        socket.once('error', (err) => {
          clearTimeout(timer)
          socket.destroy()
          if (i + 1 < addresses.length) attempt(i + 1)
          else
            reject(
              new GuardError(
                'network',
                `upstream refused the connection (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
              ),
            )
        })
      }
      attempt(0)
    })
  }

  /** Resolves and checks `url`, then connects; on refusal answers the client and returns null. */
  async function open(client: Socket, url: URL, port: number): Promise<Socket | null> {
    const deadline = Date.now() + connectTimeoutMs
    try {
      const { addresses } = await checkUrl(url, guard)
      return await dial(addresses, port, deadline)
    } catch (err) {
      const reason = err instanceof GuardError ? err.reason : 'network'
      if (reason === 'private' || reason === 'scheme')
        refuse(client, 403, 'refused by the linkbox guard', { 'X-Linkbox-Guard': reason })
      else if (reason === 'timeout')
        refuse(client, 504, 'upstream did not answer in time', { 'X-Linkbox-Guard': reason })
      else refuse(client, 502, 'upstream could not be reached', { 'X-Linkbox-Guard': reason })
      return null
    }
  }

  function join(client: Socket, upstream: Socket): void {
    upstream.setTimeout(idleTimeoutMs, () => upstream.destroy())
    const end = () => {
      client.destroy()
      upstream.destroy()
    }
    client.once('close', end)
    upstream.once('close', end)
    client.on('error', end)
    upstream.on('error', end)
    // pipe() pauses the reader while the writer's buffer is full: a slow client slows the upstream read.
    upstream.pipe(client)
    client.pipe(upstream)
    client.resume()
  }

  async function handle(client: Socket, head: Head, rest: Buffer): Promise<void> {
    const auth = head.headers.find(([k]) => k.toLowerCase() === 'proxy-authorization')?.[1] ?? ''
    if (!timingSafeEqual(digest(auth), expected))
      return refuse(client, 407, 'proxy credentials required', { 'Proxy-Authenticate': 'Basic realm="linkbox"' })

    if (head.method === 'CONNECT') {
      const m = /^(\[[0-9A-Fa-f:.]+\]|[^\s/?#@[\]:]+):(\d{1,5})$/.exec(head.target)
      const port = Number(m?.[2])
      let url: URL
      try {
        if (!m || port < 1 || port > 65535) throw new Error('bad authority')
        url = new URL(`https://${m[1]}/`)
      } catch {
        return refuse(client, 400, 'CONNECT needs host:port')
      }
      const upstream = await open(client, url, port)
      if (!upstream) return
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (rest.length) upstream.write(rest)
      return join(client, upstream)
    }

    // Absolute form, plain http only (https goes through CONNECT).
    const m = /^http:\/\/([^/?#]+)([^#]*)/i.exec(head.target)
    let url: URL
    try {
      if (!m || m[1]!.includes('@')) throw new Error('not absolute http')
      url = new URL(`http://${m[1]}/`)
    } catch {
      return refuse(client, 400, 'only absolute http:// URLs and CONNECT are proxied')
    }
    const path = m![2] || '/'
    if (!path.startsWith('/') && !path.startsWith('?')) return refuse(client, 400, 'bad request target')
    const upstream = await open(client, url, Number(url.port || 80))
    if (!upstream) return
    // Headers the client names in Connection are for this hop only, like the fixed hop-by-hop set.
    const named = new Set(
      head.headers
        .filter(([k]) => k.toLowerCase() === 'connection')
        .flatMap(([, v]) => v.split(',').map((s) => s.trim().toLowerCase())),
    )
    const lines = [`${head.method} ${path.startsWith('?') ? `/${path}` : path} HTTP/1.1`, `Host: ${url.host}`]
    for (const [k, v] of head.headers) {
      const name = k.toLowerCase()
      if (HOP_BY_HOP.has(name) || name.startsWith('proxy-') || named.has(name)) continue
      lines.push(`${k}: ${v}`)
    }
    lines.push('Connection: close')
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`)
    if (rest.length) upstream.write(rest)
    join(client, upstream)
  }

  const server = createServer((client) => {
    if (clients.size >= maxConnections) {
      // Still tracked until it closes, so that stop() can end it and the server can finish closing.
      otherSockets.add(client)
      client.once('close', () => otherSockets.delete(client))
      client.on('error', () => client.destroy())
      return refuse(client, 503, 'too many connections')
    }
    clients.add(client)
    client.once('close', () => clients.delete(client))
    client.on('error', () => client.destroy())
    client.setTimeout(idleTimeoutMs, () => client.destroy())
    const headTimer = setTimeout(() => client.destroy(), HEAD_TIMEOUT_MS)
    client.once('close', () => clearTimeout(headTimer))
    let chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      chunks.push(chunk)
      size += chunk.length
      const all = chunks.length === 1 ? chunk : Buffer.concat(chunks)
      chunks = [all]
      const end = all.indexOf('\r\n\r\n')
      if (end < 0 || end > MAX_HEAD_BYTES) {
        if (size > MAX_HEAD_BYTES) {
          client.off('data', onData)
          clearTimeout(headTimer)
          refuse(client, 431, 'request head too large')
        }
        return
      }
      client.off('data', onData)
      client.pause()
      clearTimeout(headTimer)
      const head = parseHead(all.subarray(0, end).toString('latin1'))
      if (!head) return refuse(client, 400, 'malformed request')
      handle(client, head, all.subarray(end + 4)).catch(() => client.destroy())
    }
    client.on('data', onData)
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const port = (server.address() as { port: number }).port
  return {
    url: `http://${user}:${pass}@127.0.0.1:${port}`,
    port,
    connections: () => clients.size,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const s of clients) s.destroy()
        for (const s of otherSockets) s.destroy()
      }),
  }
}
