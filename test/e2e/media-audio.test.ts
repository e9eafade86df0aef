// Audio only and the preparation of a format (issue 41 items 1 and 6): the real yt-dlp reads the fixture pages,
// ffmpeg makes mp3, m4a and opus of their sound (ffprobe checks what comes back), GET /dl/<id>/progress follows
// the making as server-sent events, and a client that leaves stops a run nobody else waits for.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { makeBox, tempDir, type TestBox } from '../support/app'
import { CLIP, startMediaFixtures, type FixtureName, type MediaFixtures } from '../support/media-fixtures'
import { tampered } from '../support/tamper'

const LONG = 60_000
let fx: MediaFixtures
let box: TestBox
let key: string
let origin: string

beforeAll(async () => {
  fx = await startMediaFixtures()
  box = await makeBox({ media: { allow_private_networks: true }, server: { host: '127.0.0.1', port: 0 } })
  key = await box.account('audio')
  origin = `http://127.0.0.1:${box.listen().port}`
})
afterAll(async () => {
  await box?.cleanup()
  await fx?.stop()
})

let unique = 0
const fresh = (f: MediaFixtures, name: FixtureName) =>
  `${f.url(name)}${f.url(name).includes('?') ? '&' : '?'}t=${++unique}`
const download = (url: string, query: Record<string, string> = {}, b: TestBox = box, k = key) =>
  b.get('/api/download.json', { url, ...query }, { 'x-api-key': k })
const local = (link: string) => {
  const u = new URL(link)
  return u.pathname + u.search
}
const progressOf = (link: string) => {
  const u = new URL(link)
  return `${u.pathname}/progress${u.search}`
}

interface Probe {
  streams: {
    codec_type: string
    codec_name: string
    disposition?: { attached_pic?: number }
    tags?: Record<string, string>
  }[]
  format: { duration: string; tags?: Record<string, string> }
}
async function ffprobe(bytes: Uint8Array): Promise<Probe> {
  const dir = tempDir('linkbox-probe-')
  try {
    await Bun.write(`${dir}/f`, bytes)
    const p = Bun.spawn(['ffprobe', '-v', 'error', '-show_streams', '-show_format', '-of', 'json', `${dir}/f`], {
      stdout: 'pipe',
    })
    return JSON.parse(await new Response(p.stdout).text())
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
/** Tags as ffprobe names them in the container (ID3 and MP4 upper- or lower-case; Ogg's in the stream). */
const tagOf = (p: Probe, name: string) => {
  const all = [p.format.tags ?? {}, ...p.streams.map((s) => s.tags ?? {})]
  for (const tags of all) for (const [k, v] of Object.entries(tags)) if (k.toLowerCase() === name) return v
  return undefined
}

interface Sse {
  events: { event: string; data: any }[]
  done: Promise<void>
  close(): void
}
/** Reads an event stream over a real socket until it ends or is closed. */
function sse(path: string): Sse {
  const controller = new AbortController()
  const events: Sse['events'] = []
  const done = (async () => {
    const res = await fetch(origin + path, { signal: controller.signal })
    if (res.headers.get('content-type')?.startsWith('application/json')) {
      events.push({ event: 'http', data: { status: res.status, body: await res.json() } })
      return
    }
    const decoder = new TextDecoder()
    let buffer = ''
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true })
      let end = buffer.indexOf('\n\n')
      while (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const event = /^event: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (event && data) events.push({ event, data: JSON.parse(data) })
        end = buffer.indexOf('\n\n')
      }
    }
  })().catch((err) => {
    if ((err as Error).name !== 'AbortError') throw err
  })
  return { events, done, close: () => controller.abort() }
}

/** Processes whose command line names `text` (the box's data directory: its runs' work folders). */
function processesNaming(text: string): string[] {
  const found: string[] = []
  for (const pid of readdirSync('/proc').filter((p) => /^[0-9]+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
      if (cmd.includes(text)) found.push(`${pid} ${cmd.slice(0, 200)}`)
    } catch {}
  }
  return found
}
const workFolders = (b: TestBox) => {
  try {
    return readdirSync(join(b.dir, 'media', 'tmp'))
  } catch {
    return []
  }
}
async function until(what: () => boolean, ms = 20_000) {
  const end = Date.now() + ms
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await Bun.sleep(50)
  }
}

describe('audio only', () => {
  test(
    'the video page (h264 + aac) gives mp3, m4a and opus: decodable audio of its duration, tagged with its title',
    async () => {
      const r = await download(fresh(fx, 'video-page'))
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const ret = r.body.return
      const audio = ret.formats.filter((f: any) => f.kind === 'audio')
      expect(audio.map((f: any) => [f.id, f.ext, f.note])).toEqual([
        ['0/mp3', 'mp3', 'audio only, extracted (mp3)'],
        ['0/m4a', 'm4a', 'audio only, extracted (m4a)'],
        ['0/opus', 'opus', 'audio only, extracted (opus)'],
      ])
      for (const f of audio) {
        const res = await box.request(local(f.url))
        expect(res.status, `${f.ext}: ${res.status === 200 ? '' : await res.clone().text()}`).toBe(200)
        expect(res.headers.get('content-type')).toBe(
          { mp3: 'audio/mpeg', m4a: 'audio/mp4', opus: 'audio/ogg' }[f.ext as 'mp3'],
        )
        expect(res.headers.get('content-disposition')).toContain(`.${f.ext}`)
        const bytes = new Uint8Array(await res.arrayBuffer())
        const probe = await ffprobe(bytes)
        const sound = probe.streams.filter((s) => s.codec_type === 'audio')
        expect(
          sound.map((s) => s.codec_name),
          f.ext,
        ).toEqual([{ mp3: 'mp3', m4a: 'aac', opus: 'opus' }[f.ext as 'mp3']])
        expect(Math.abs(Number(probe.format.duration) - CLIP.seconds), f.ext).toBeLessThanOrEqual(0.2)
        expect(tagOf(probe, 'title'), f.ext).toBe(ret.title)
        // The poster as cover where the container takes one.
        const cover = probe.streams.filter((s) => s.codec_type === 'video')
        expect(
          cover.map((s) => s.disposition?.attached_pic),
          f.ext,
        ).toEqual(f.ext === 'opus' ? [] : [1])
        // Served from the cache with Range, as merged formats are.
        const part = await box.request(local(f.url), { headers: { range: 'bytes=0-99' } })
        expect(part.status).toBe(206)
        expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.slice(0, 100))
      }
      expect(box.media.preparations.size).toBe(0)
      expect(workFolders(box)).toEqual([])
    },
    LONG,
  )

  test(
    "audio=1 lists only audio: the extracted ones, plus a page's own audio-only formats",
    async () => {
      const video = await download(fresh(fx, 'video-page'), { audio: '1' })
      expect(video.status).toBe(200)
      expect(video.body.return.formats.map((f: any) => f.id)).toEqual(['0/mp3', '0/m4a', '0/opus'])
      const dash = await download(fresh(fx, 'dash-page'), { audio: '1' })
      expect(dash.status, JSON.stringify(dash.body)).toBe(200)
      const formats = dash.body.return.formats
      expect(formats.every((f: any) => f.kind === 'audio')).toBe(true)
      const own = formats.filter((f: any) => !f.note.includes('extracted'))
      expect(own).toHaveLength(1)
      expect(formats.map((f: any) => f.id).slice(-3)).toEqual(['mp3', 'm4a', 'opus'].map((e) => `${own[0].id}/${e}`))
      const bad = await download(fresh(fx, 'video-page'), { audio: 'yes' })
      expect([bad.status, bad.body.code]).toEqual([400, 'invalid_parameter'])
    },
    LONG,
  )
})

describe('audio in a playlist', () => {
  test(
    "playlist=1&audio=1: each entry lists only its extracted audio; the second entry's mp3 is its own sound, tagged with its title",
    async () => {
      const r = await download(fresh(fx, 'playlist-page'), { playlist: '1', audio: '1' })
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      const entries = r.body.return.entries
      expect(entries).toHaveLength(3)
      for (const e of entries) expect(e.formats.map((f: any) => f.id)).toEqual(['0/mp3', '0/m4a', '0/opus'])
      const mp3 = entries[1].formats[0]
      const before = fx.requests.length
      const res = await box.request(local(mp3.url))
      expect(res.status, res.status === 200 ? '' : await res.clone().text()).toBe(200)
      const probe = await ffprobe(new Uint8Array(await res.arrayBuffer()))
      expect(probe.streams.filter((s) => s.codec_type === 'audio').map((s) => s.codec_name)).toEqual(['mp3'])
      expect(Math.abs(Number(probe.format.duration) - CLIP.seconds)).toBeLessThanOrEqual(0.2)
      expect(tagOf(probe, 'title')).toBe(entries[1].title)
      // The second entry's own file was the source.
      expect(fx.requests.slice(before).map((q) => q.path)).toContain('/media/clip-two.mp4')
    },
    LONG,
  )
})

describe('GET /dl/<id>/progress', () => {
  test(
    'an audio format: progress events, then ready with the link; a second ask is ready at once',
    async () => {
      const r = await download(fresh(fx, 'dash-page'), { audio: '1' })
      const mp3 = r.body.return.formats.find((f: any) => f.ext === 'mp3')
      const stream = sse(progressOf(mp3.url))
      await stream.done
      const names = stream.events.map((e) => e.event)
      expect(names.at(-1)).toBe('ready')
      expect(names.filter((n) => n === 'ready')).toHaveLength(1)
      expect(names.slice(0, -1).every((n) => n === 'progress')).toBe(true)
      expect(names.length).toBeGreaterThan(1)
      for (const e of stream.events.slice(0, -1)) {
        expect(['queued', 'downloading', 'converting']).toContain(e.data.step)
        expect(Object.keys(e.data).sort()).toEqual(['bytes', 'percent', 'speed', 'step', 'total'])
      }
      // yt-dlp's fetch of the DASH audio, then ffmpeg's conversion, each with its numbers.
      const steps = new Set(stream.events.map((e) => e.data.step))
      expect(steps.has('downloading') && steps.has('converting')).toBe(true)
      expect(stream.events.some((e) => e.data.step === 'downloading' && e.data.bytes > 0 && e.data.percent > 0)).toBe(
        true,
      )
      expect(stream.events.at(-1)!.data).toEqual({ url: mp3.url })
      // Ready: the link answers from the cache; asked again, progress says ready at once.
      const file = await box.request(local(mp3.url))
      expect(file.status).toBe(200)
      expect(
        (await ffprobe(new Uint8Array(await file.arrayBuffer()))).streams.some((s) => s.codec_type === 'audio'),
      ).toBe(true)
      const again = sse(progressOf(mp3.url))
      await again.done
      expect(again.events).toEqual([{ event: 'ready', data: { url: mp3.url } }])
    },
    LONG,
  )

  test(
    'a format streamed from upstream is ready at once; HEAD checks the link and starts nothing',
    async () => {
      const r = await download(fresh(fx, 'video-page'))
      const direct = r.body.return.formats.find((f: any) => f.id === '0')
      const stream = sse(progressOf(direct.url))
      await stream.done
      expect(stream.events).toEqual([{ event: 'ready', data: { url: direct.url } }])
      const mp3 = r.body.return.formats.find((f: any) => f.ext === 'mp3')
      const head = await fetch(origin + progressOf(mp3.url), { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect(head.headers.get('content-type')).toStartWith('text/event-stream')
      expect(head.headers.get('cache-control')).toBe('no-store')
      expect(box.media.preparations.size).toBe(0)
    },
    LONG,
  )

  test(
    'a tampered, expired or unknown query: 403, 410, 404 as JSON, before any stream',
    async () => {
      const r = await download(fresh(fx, 'video-page'), { audio: '1' })
      const url = new URL(r.body.return.formats[0].url)
      const id = url.pathname.split('/')[2]
      const exp = url.searchParams.get('exp')!
      const sig = url.searchParams.get('sig')!
      const refused = await box.request(`/dl/${id}/progress?exp=${exp}&sig=${tampered(sig)}`)
      expect(refused.status).toBe(403)
      expect((await refused.json()).code).toBe('invalid_signature')
      const signed = box.signer.sign(`dl-${id}`, Date.now() - 1000).query
      const expired = await box.request(`/dl/${id}/progress?${signed}`)
      expect(expired.status).toBe(410)
      expect((await expired.json()).code).toBe('expired')
      const unknown = await box.request(
        `/dl/999999/progress?${box.signer.sign('dl-999999', Date.now() + 60_000).query}`,
      )
      expect(unknown.status).toBe(404)
      expect(unknown.headers.get('content-type')).toStartWith('application/json')
      expect(box.media.preparations.size).toBe(0)
    },
    LONG,
  )
})

describe('a client that leaves', () => {
  test(
    'closing the only progress stream kills the run (no process left, its folder gone); a second waiter keeps it; a /dl request is a waiter',
    async () => {
      // Every request to this server waits 700 ms: yt-dlp fetching the DASH audio's segments takes seconds.
      const slow = await startMediaFixtures({ delayMs: 700 })
      try {
        const r = await download(fresh(slow, 'dash-page'), { audio: '1' })
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        const mp3 = r.body.return.formats.find((f: any) => f.ext === 'mp3')
        const m4a = r.body.return.formats.find((f: any) => f.ext === 'm4a')

        const lone = sse(progressOf(mp3.url))
        await until(() => processesNaming(box.dir).length > 0)
        expect(box.media.preparations.size).toBeGreaterThan(0)
        lone.close()
        await lone.done
        await until(() => processesNaming(box.dir).length === 0 && workFolders(box).length === 0, 5_000)
        await until(() => box.media.preparations.size === 0, 5_000)
        expect(lone.events.some((e) => e.event === 'ready')).toBe(false)

        // Two waiters (a progress stream and a /dl request); one leaves, the other gets the file.
        const first = sse(progressOf(m4a.url))
        const second = sse(progressOf(m4a.url))
        await until(() => processesNaming(box.dir).length > 0)
        first.close()
        await first.done
        await Bun.sleep(1000)
        expect(processesNaming(box.dir).length + box.media.preparations.size).toBeGreaterThan(0)
        await second.done
        expect(second.events.at(-1)).toEqual({ event: 'ready', data: { url: m4a.url } })
        const file = await box.request(local(m4a.url))
        expect(file.status).toBe(200)
        expect(workFolders(box)).toEqual([])

        // A /dl request is a waiter too: its client leaving mid-preparation stops the run.
        const opus = r.body.return.formats.find((f: any) => f.ext === 'opus')
        await until(() => processesNaming(box.dir).length === 0 && box.media.preparations.size === 0, 5_000)
        const client = new AbortController()
        const get = fetch(origin + local(opus.url), { signal: client.signal }).catch((err) => err)
        await until(() => box.media.preparations.size > 0 && processesNaming(box.dir).length > 0)
        client.abort()
        expect(await get).toMatchObject({ name: 'AbortError' })
        await until(() => processesNaming(box.dir).length === 0 && workFolders(box).length === 0, 5_000)
        expect(box.media.preparations.size).toBe(0)
      } finally {
        await slow.stop()
      }
    },
    LONG * 2,
  )
})

describe('a long preparation', () => {
  test(
    "outlasts the server's idle timeout: /dl and the progress stream are held open while nothing is sent",
    async () => {
      const slow = await startMediaFixtures({ delayMs: 700 })
      // An idle timeout of 1 s (the server's is 10 s), against a preparation of several seconds.
      const held = await makeBox(
        { media: { allow_private_networks: true }, server: { host: '127.0.0.1', port: 0 } },
        { idleTimeoutSeconds: 1 },
      )
      try {
        const k = await held.account('held')
        const at = `http://127.0.0.1:${held.listen().port}`
        const r = await download(fresh(slow, 'dash-page'), { audio: '1' }, held, k)
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        const [mp3, m4a] = ['mp3', 'm4a'].map((e) => r.body.return.formats.find((f: any) => f.ext === e))
        const started = Date.now()
        const file = await fetch(at + local(mp3.url))
        expect(file.status).toBe(200)
        expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(1000)
        expect(Date.now() - started).toBeGreaterThan(3000)
        const events = await (await fetch(at + progressOf(m4a.url))).text()
        expect(events).toContain('event: ready')
      } finally {
        await held.cleanup()
        await slow.stop()
      }
    },
    LONG,
  )
})

describe('the guard', () => {
  test(
    'an audio ticket whose page now resolves to a private address is refused, and nothing is fetched',
    async () => {
      let open = true
      const guarded = await makeBox(
        { media: { allow_private_networks: false } },
        {
          resolve: async (host) => (host === 'public.test' ? ['127.0.0.1'] : []),
          isAllowed: (a) => open && a === '127.0.0.1',
        },
      )
      try {
        const k = await guarded.account('g')
        const page = `http://public.test:${new URL(fx.origin).port}/pages/video.html?t=${++unique}`
        const r = await download(page, { audio: '1' }, guarded, k)
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        open = false
        const seen = fx.requests.length
        const res = await guarded.request(local(r.body.return.formats[0].url))
        expect(res.status).toBe(502)
        expect(await res.text()).toContain('private or local network address')
        // Its progress stream says so as `failed`, with the code and message and no stack.
        const events = await (await guarded.request(progressOf(r.body.return.formats[1].url))).text()
        const failed = /event: failed\ndata: (.*)\n/.exec(events)
        expect(JSON.parse(failed![1]!)).toEqual({
          code: 'upstream_failed',
          message: 'The file leads to a private or local network address.',
        })
        expect(fx.requests.slice(seen).filter((q) => q.path.startsWith('/media/'))).toEqual([])
      } finally {
        await guarded.cleanup()
      }
    },
    LONG,
  )
})
