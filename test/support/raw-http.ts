// Raw HTTP/1.1 over a TCP socket: for requests fetch() refuses to send (a malformed Host header, say).
export interface RawAnswer {
  status: number
  head: string
  body: string
}

export async function rawRequest(port: number, request: string, timeoutMs = 5000): Promise<RawAnswer> {
  const { promise, resolve } = Promise.withResolvers<string>()
  const chunks: Uint8Array[] = []
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      open: (s) => void s.write(request),
      data: (_s, data) => void chunks.push(new Uint8Array(data)),
      close: () => resolve(Buffer.concat(chunks).toString('latin1')),
      error: () => resolve(Buffer.concat(chunks).toString('latin1')),
    },
  })
  const timer = setTimeout(() => socket.end(), timeoutMs)
  const text = await promise
  clearTimeout(timer)
  const split = text.indexOf('\r\n\r\n')
  const head = split < 0 ? text : text.slice(0, split)
  return {
    status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0),
    head,
    body: split < 0 ? '' : text.slice(split + 4),
  }
}
