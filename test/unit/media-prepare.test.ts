// The preparation registry's waiters and the progress parsers (src/media/prepare.ts), without a subprocess.
import { expect, test } from 'bun:test'
import { AppError } from '../../src/kernel/errors'
import { extractedAudio, ffmpegArgs, isAudioTicket } from '../../src/media/audio'
import { parseInfo } from '../../src/media/extract'
import {
  createPreparations,
  ffmpegDuration,
  ffmpegProgress,
  MAX_WAITERS,
  type RunControl,
  ytdlpProgress,
} from '../../src/media/prepare'

/** A run that lasts until it is aborted (then rejects) or `finish` is called. */
function controllable() {
  let control: RunControl | undefined
  let finish: (path: string) => void = () => {}
  let aborted = false
  const run = (c: RunControl) => {
    control = c
    return new Promise<string>((resolve, reject) => {
      finish = resolve
      c.signal.addEventListener('abort', () => {
        aborted = true
        reject(new AppError(499, 'client_closed', 'left'))
      })
    })
  }
  return { run, finish: (p: string) => finish(p), report: (p: any) => control!.report(p), aborted: () => aborted }
}

test('the last waiter leaving aborts the run; one left keeps it; a later ask starts again', async () => {
  const preps = createPreparations(4)
  const a = new AbortController()
  const b = new AbortController()
  const run = controllable()
  const first = preps.join('k', run.run, a.signal)
  const second = preps.join('k', () => Promise.reject(new Error('not started twice')), b.signal)
  expect(second).toBe(first)
  expect(preps.waitersOf('k')).toBe(2)
  a.abort()
  expect(run.aborted()).toBe(false)
  expect(preps.waitersOf('k')).toBe(1)
  b.abort()
  expect(run.aborted()).toBe(true)
  expect(preps.size).toBe(0)
  await expect(first.done).rejects.toMatchObject({ code: 'client_closed' })
  const again = controllable()
  const third = preps.join('k', again.run, new AbortController().signal)
  expect(third).not.toBe(first)
  again.finish('/cache/file')
  expect(await third.done).toBe('/cache/file')
  expect(preps.size).toBe(0)
})

test('watchers see each report, then the last one when the run ends; past the bound: busy', async () => {
  const preps = createPreparations(1)
  const run = controllable()
  const prep = preps.join('x', run.run, new AbortController().signal)
  const seen: string[] = []
  prep.watch((p) => seen.push(`${p.step}:${p.bytes}`))
  expect(() => preps.join('y', controllable().run, new AbortController().signal)).toThrow(
    expect.objectContaining({ code: 'busy' }),
  )
  run.report({ step: 'downloading', bytes: 10, total: 100, speed: 5, percent: 10 })
  run.finish('/f')
  await prep.done
  expect(seen).toEqual(['downloading:10', 'downloading:10'])
  const many = createPreparations(1)
  const long = controllable()
  for (let i = 0; i < MAX_WAITERS; i++) many.join('z', long.run, new AbortController().signal)
  expect(() => many.join('z', long.run, new AbortController().signal)).toThrow(
    expect.objectContaining({ code: 'busy' }),
  )
  expect(prep.progress.bytes).toBe(10)
})

test("yt-dlp's progress line: bytes, total (or its estimate), speed, percent; other lines are not progress", () => {
  expect(ytdlpProgress('[linkbox-progress] 512 1024 NA 2048.5')).toEqual({
    step: 'downloading',
    bytes: 512,
    total: 1024,
    speed: 2049,
    percent: 50,
  })
  expect(ytdlpProgress('[linkbox-progress] 100 NA 400.0 NA')).toMatchObject({ total: 400, speed: null, percent: 25 })
  expect(ytdlpProgress('[linkbox-progress] 100 NA NA NA')).toMatchObject({ total: null, percent: null })
  expect(ytdlpProgress('[download] Destination: media.mp4')).toBeNull()
})

test("ffmpeg's -progress blocks: bytes written, percent of the input's duration, bytes per second", () => {
  let duration: number | null = null
  const parse = ffmpegProgress(() => duration)
  expect(ffmpegDuration('  Duration: 00:01:02.50, start: 0.000000, bitrate: 1 kb/s')).toBe(62.5)
  duration = 62.5
  const lines = ['total_size=50000', 'out_time_us=31250000', 'speed=10x', 'progress=continue']
  const out = lines.map(parse)
  expect(out.slice(0, 3)).toEqual([null, null, null])
  expect(out[3]).toEqual({ step: 'converting', bytes: 50000, total: null, speed: 16000, percent: 50 })
  expect(parse('progress=end')).toMatchObject({ percent: 100 })
})

test('extracted audio: from the best audio-only format, ids <source>/<ext>, none for a photo', () => {
  const info = {
    title: 'Song',
    uploader: 'Band',
    thumbnail: 'https://example.com/t.jpg',
    formats: [
      { format_id: 'a1', url: 'https://example.com/a1', ext: 'm4a', vcodec: 'none', acodec: 'mp4a.40.2' },
      { format_id: 'a2', url: 'https://example.com/a2', ext: 'webm', vcodec: 'none', acodec: 'opus' },
      { format_id: 'v', url: 'https://example.com/v', ext: 'mp4', vcodec: 'avc1', acodec: 'mp4a.40.2' },
    ],
  }
  const extraction = parseInfo(info, true)!
  const audio = extractedAudio(extraction, true)
  expect(audio.map((f) => [f.id, f.ext, f.kind, f.note])).toEqual([
    ['a2/mp3', 'mp3', 'audio', 'audio only, extracted (mp3)'],
    ['a2/m4a', 'm4a', 'audio', 'audio only, extracted (m4a)'],
    ['a2/opus', 'opus', 'audio', 'audio only, extracted (opus)'],
  ])
  expect(JSON.parse(audio[0]!.recipe!)).toMatchObject({ title: 'Song', artist: 'Band', sourceExt: 'webm' })
  expect(audio.every((f) => isAudioTicket({ format_id: f.id }))).toBe(true)
  expect(isAudioTicket({ format_id: 'a2' })).toBe(false)
  expect(extractedAudio(extraction, false)).toEqual([])
  expect(extractedAudio({ ...extraction, kind: 'photo' }, true)).toEqual([])
})

test('ffmpeg arguments: the cover only where the container takes one, tags as single arguments', () => {
  const mp3 = ffmpegArgs('mp3', '/w/src', '/w/cover.jpg', { title: 'A "title"; rm -rf', artist: null }, '/w/a.mp3')
  expect(mp3).toContain('title=A "title"; rm -rf')
  expect(mp3).toContain('attached_pic')
  expect(mp3.slice(-3)).toEqual(['-f', 'mp3', '/w/a.mp3'])
  const opus = ffmpegArgs('opus', '/w/src', null, { title: 't', artist: 'b' }, '/w/a.opus')
  expect(opus).toContain('-vn')
  expect(opus).toContain('artist=b')
})
