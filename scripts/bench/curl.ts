// Timed GETs with curl, a process of its own (the media bench's client for signed downloads): each transfer's
// status, size and time from its -w line, checked before it counts.
const MiB = 1024 * 1024

export interface Transfer {
  status: number
  bytes: number
  seconds: number
}

/** curl's `-w` lines, one per transfer: `<http_code> <size_download> <time_total>`. */
export function parseCurl(out: string): Transfer[] {
  return out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [status, bytes, seconds] = line.trim().split(/\s+/).map(Number)
      if (!Number.isFinite(status) || !Number.isFinite(bytes) || !Number.isFinite(seconds))
        throw new Error(`bench: not a curl -w line: ${JSON.stringify(line)}`)
      return { status: status!, bytes: bytes!, seconds: seconds! }
    })
}

/**
 * GETs each of `urls` in turn with one curl (keep-alive: one connection per server), the bodies thrown away;
 * each transfer must be a 200 of exactly `size` bytes (a short or failed answer must not count as a fast one).
 */
export async function curlGets(urls: string[], size: number): Promise<Transfer[]> {
  const args = ['curl', '--silent', '--show-error', '-H', 'accept-encoding: identity']
  for (const url of urls) args.push('-o', '/dev/null', '-w', '%{http_code} %{size_download} %{time_total}\\n', url)
  const proc = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ])
  if (code !== 0) throw new Error(`bench: curl exited ${code}: ${err}`)
  const transfers = parseCurl(out)
  if (transfers.length !== urls.length)
    throw new Error(`bench: curl reported ${transfers.length} transfers, ${urls.length} asked: ${out}`)
  transfers.forEach((t, i) => {
    if (t.status !== 200 || t.bytes !== size)
      throw new Error(
        `bench: ${urls[i]!.replace(/sig=[^&]+/, 'sig=…')} gave HTTP ${t.status} with ${t.bytes} bytes, ${size} expected`,
      )
  })
  return transfers
}

/** MiB/s of transfers one after another: their bytes over the time curl spent in them. */
export const throughput = (ts: Transfer[]) =>
  ts.reduce((n, t) => n + t.bytes, 0) / MiB / ts.reduce((s, t) => s + t.seconds, 0)

/**
 * One round of the single client: `rounds` GETs of each URL by one curl, taking them in turn (starting with
 * the `first`th), so that whatever else the machine does falls on all alike. MiB/s of each, in `urls`' order.
 */
export async function alternating(urls: string[], rounds: number, size: number, first: number): Promise<number[]> {
  const order = urls.map((_, i) => (first + i) % urls.length)
  const asked = Array.from({ length: rounds }, () => order).flat()
  const ts = await curlGets(
    asked.map((i) => urls[i]!),
    size,
  )
  return urls.map((_, u) => throughput(ts.filter((_, k) => asked[k] === u)))
}

/** `clients` curls at once, each with `times` GETs: MiB/s of all of them over the wall-clock time of the lot. */
export async function parallelGets(url: string, clients: number, times: number, size: number): Promise<number> {
  const started = performance.now()
  const all = await Promise.all(Array.from({ length: clients }, () => curlGets(Array(times).fill(url), size)))
  const seconds = (performance.now() - started) / 1000
  return all.flat().reduce((n, t) => n + t.bytes, 0) / MiB / seconds
}
