// Audio only (issue 41): the extracted mp3, m4a and opus formats download.json lists for a page with sound, and
// their making: the best audio is fetched (through the guard, as any format is), converted by ffmpeg with the
// title, the artist and the thumbnail as cover where the container takes one, into the media cache.
import { mkdtempSync, renameSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../kernel/config'
import { AppError } from '../kernel/errors'
import { GuardError, guardedFetch } from '../kernel/net/guard'
import { contentTypeOf, upstreamFailed, type Extraction, type MediaFormat } from './extract'
import { fileFetchFailure, type MediaGuard } from './page'
import { clientLeft, ffmpegDuration, ffmpegProgress, type Progress, type RunControl } from './prepare'
import { runYtdlp } from './runner'
import type { TicketRow } from './storage/contract'

export const AUDIO_EXTS = ['mp3', 'm4a', 'opus'] as const
export type AudioExt = (typeof AUDIO_EXTS)[number]

/** ffmpeg's settings per container (the bench's "ffmpeg alone" uses the same). */
export const AUDIO_CODECS: Record<AudioExt, { muxer: string; codec: string[]; acodec: string; cover: boolean }> = {
  mp3: { muxer: 'mp3', codec: ['-c:a', 'libmp3lame', '-q:a', '2', '-id3v2_version', '3'], acodec: 'mp3', cover: true },
  m4a: { muxer: 'ipod', codec: ['-c:a', 'aac', '-b:a', '192k', '-movflags', '+faststart'], acodec: 'aac', cover: true },
  // Ogg has no cover but a base64 picture in a comment, which ffmpeg 5 does not write: none.
  opus: { muxer: 'opus', codec: ['-c:a', 'libopus', '-b:a', '128k'], acodec: 'opus', cover: false },
}

/**
 * What an extracted-audio ticket stores in its `headers` column (a JSON object, as for every ticket): the
 * source format's request headers and what the file is tagged with. Its format_id is `<source id>/<ext>`:
 * yt-dlp turns every `/` of a site's format id into `_`, so no format of a site looks like one.
 */
export interface AudioRecipe {
  headers: Record<string, string>
  /** The source format's extension (its file in the cache, when it is fetched by yt-dlp). */
  sourceExt: string
  title: string
  artist: string | null
  cover: string | null
}

const AUDIO_ID = /^(.+)\/(mp3|m4a|opus)$/
export const isAudioTicket = (t: Pick<TicketRow, 'format_id'>) => AUDIO_ID.test(t.format_id)

/** The format whose sound is converted: the best audio-only one, else the best with both (never a merge). */
function bestAudio(formats: MediaFormat[]): MediaFormat | null {
  const single = formats.filter((f) => !f.id.includes('+') && !f.recipe)
  return single.findLast((f) => f.kind === 'audio') ?? single.findLast((f) => f.kind === 'video+audio') ?? null
}

/** The extracted audio formats of a page with sound (none without ffmpeg to make them). */
export function extractedAudio(extraction: Extraction, canConvert: boolean): MediaFormat[] {
  if (!canConvert || extraction.kind === 'photo') return []
  const source = bestAudio(extraction.formats)
  if (!source) return []
  const recipe: AudioRecipe = {
    headers: source.headers,
    sourceExt: source.ext,
    title: extraction.title,
    artist: extraction.artist ?? null,
    cover: extraction.thumbnail,
  }
  return AUDIO_EXTS.map((ext) => ({
    id: `${source.id}/${ext}`,
    ext,
    kind: 'audio' as const,
    width: null,
    height: null,
    fps: null,
    vcodec: null,
    acodec: AUDIO_CODECS[ext].acodec,
    filesize: null,
    note: `audio only, extracted (${ext})`,
    method: source.method,
    upstreamUrl: source.upstreamUrl,
    headers: source.headers,
    contentType: contentTypeOf(ext),
    recipe: JSON.stringify(recipe),
  }))
}

function recipeOf(t: TicketRow): AudioRecipe {
  const r = JSON.parse(t.headers) as Partial<AudioRecipe>
  return {
    headers: r.headers && typeof r.headers === 'object' ? r.headers : {},
    sourceExt: typeof r.sourceExt === 'string' && /^[a-z0-9]{1,8}$/.test(r.sourceExt) ? r.sourceExt : 'bin',
    title: typeof r.title === 'string' ? r.title : '',
    artist: typeof r.artist === 'string' ? r.artist : null,
    cover: typeof r.cover === 'string' ? r.cover : null,
  }
}

export interface AudioDeps {
  config: Config
  guard: MediaGuard
  /** A whole file of the cache for a yt-dlp format (the source of a segmented audio), joined as a waiter. */
  sourceFile(t: TicketRow, control: RunControl): Promise<string>
  /** Runs `work` in a slot of the fetch limiter (media.max_concurrent). */
  slot<T>(work: () => Promise<T>): Promise<T>
  /** The admin's cookies for a URL we fetch ourselves (cookies.ts), or null. */
  cookieHeader?(url: string): Promise<string | null>
  tmpDir: string
}

const COVER_MAX_BYTES = 2 * 1024 * 1024
const UPSTREAM_HEADERS_MS = 30_000

/** Converts the ticket's audio into `path` (a file of the cache); the path. */
export async function convertAudio(deps: AudioDeps, t: TicketRow, path: string, control: RunControl): Promise<string> {
  const m = AUDIO_ID.exec(t.format_id)!
  const ext = m[2] as AudioExt
  const recipe = recipeOf(t)
  // A segmented source is fetched whole by yt-dlp first (its own preparation, in its own slot).
  const fetched =
    t.method === 'ytdlp'
      ? await deps.sourceFile(
          { ...t, format_id: m[1]!, headers: '{}', filename: `source.${recipe.sourceExt}` },
          control,
        )
      : null
  return deps.slot(async () => {
    if (control.signal.aborted) throw clientLeft()
    const work = mkdtempSync(join(deps.tmpDir, 'audio-'))
    try {
      const source = fetched ?? (await download(deps, t.upstream_url, recipe.headers, join(work, 'source'), control))
      const cover = AUDIO_CODECS[ext].cover && recipe.cover ? await coverOf(deps, recipe.cover, work, control) : null
      const out = join(work, `audio.${ext}`)
      await ffmpeg(deps.config, ffmpegArgs(ext, source, cover, recipe, out), control)
      if (control.signal.aborted) throw clientLeft()
      renameSync(out, path)
      return path
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  })
}

/** ffmpeg's arguments: the first audio stream, the tags, the cover as an attached picture. */
export function ffmpegArgs(
  ext: AudioExt,
  source: string,
  cover: string | null,
  tags: Pick<AudioRecipe, 'title' | 'artist'>,
  out: string,
): string[] {
  const c = AUDIO_CODECS[ext]
  const coverArgs = cover ? ['-map', '1:0', '-c:v', 'copy', '-disposition:v:0', 'attached_pic'] : ['-vn', '-sn', '-dn']
  const coverTags =
    cover && ext === 'mp3' ? ['-metadata:s:v', 'title=Album cover', '-metadata:s:v', 'comment=Cover (front)'] : []
  return [
    '-nostdin',
    '-hide_banner',
    '-y',
    '-i',
    source,
    ...(cover ? ['-i', cover] : []),
    '-map',
    '0:a:0',
    ...coverArgs,
    '-map_metadata',
    '-1',
    ...(tags.title ? ['-metadata', `title=${tags.title}`] : []),
    ...(tags.artist ? ['-metadata', `artist=${tags.artist}`] : []),
    ...c.codec,
    ...coverTags,
    '-progress',
    'pipe:1',
    '-nostats',
    '-f',
    c.muxer,
    out,
  ]
}

async function ffmpeg(config: Config, args: string[], control: RunControl) {
  let duration: number | null = null
  const parse = ffmpegProgress(() => duration)
  const result = await runYtdlp({
    command: ['ffmpeg'],
    args,
    proxy: null, // ffmpeg reads local files only
    timeoutMs: Math.min(3600, config.media.extract_timeout * 20) * 1000,
    maxStdoutBytes: 0,
    signal: control.signal,
    onLine: (line) => {
      const p = parse(line)
      if (p) control.report(p)
    },
    onErrLine: (line) => {
      duration ??= ffmpegDuration(line)
    },
  })
  if (control.signal.aborted) throw clientLeft()
  if (result.timedOut) throw new AppError(504, 'timeout', 'The audio could not be made in time.')
  if (result.code !== 0) {
    if (/does not contain any stream|matches no streams/i.test(result.stderr))
      throw new AppError(422, 'no_audio', 'The media has no sound to extract.')
    throw new AppError(502, 'conversion_failed', 'ffmpeg could not convert the audio.')
  }
}

/** As a streamed file's (page.ts), but a client that left is said as such. */
const guardFailure = (err: unknown) =>
  err instanceof GuardError && err.reason === 'aborted' ? clientLeft() : fileFetchFailure(err)

/** The source file, fetched through the guard into `file` (at most media.cache_max_bytes), with progress. */
async function download(
  deps: AudioDeps,
  url: string,
  headers: Record<string, string>,
  file: string,
  control: RunControl,
): Promise<string> {
  let response: Response
  const cookie = (await deps.cookieHeader?.(url)) ?? null
  try {
    ;({ response } = await guardedFetch(url, {
      ...deps.guard,
      method: 'GET',
      headers: { ...headers, ...(cookie ? { cookie } : {}), 'accept-encoding': 'identity' },
      signal: control.signal,
      timeoutMs: UPSTREAM_HEADERS_MS,
    }))
  } catch (err) {
    throw guardFailure(err)
  }
  if (response.status !== 200 || !response.body) {
    void response.body?.cancel().catch(() => {})
    throw upstreamFailed(`its server answered HTTP ${response.status}; ask download.json again`)
  }
  const length = Number(response.headers.get('content-length'))
  const total = Number.isSafeInteger(length) && length > 0 ? length : null
  const max = deps.config.media.cache_max_bytes
  if (total !== null && total > max) {
    void response.body.cancel().catch(() => {})
    throw new AppError(413, 'too_large', 'The file is larger than the media cache (media.cache_max_bytes).')
  }
  const sink = Bun.file(file).writer()
  const started = performance.now()
  let bytes = 0
  let last = 0
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.byteLength
      if (bytes > max) throw new AppError(413, 'too_large', 'The file is larger than the media cache.')
      sink.write(chunk)
      const now = performance.now()
      if (now - last >= 200) {
        last = now
        control.report(downloading(bytes, total, started, now))
      }
    }
  } catch (err) {
    throw control.signal.aborted ? clientLeft() : guardFailure(err)
  } finally {
    await sink.end()
  }
  control.report(downloading(bytes, total, started, performance.now()))
  return file
}

const downloading = (bytes: number, total: number | null, started: number, now: number): Progress => ({
  step: 'downloading',
  bytes,
  total,
  speed: now > started ? Math.round((bytes / (now - started)) * 1000) : null,
  percent: total ? Math.min(100, Math.round((bytes / total) * 1000) / 10) : null,
})

/** The thumbnail as a cover (a JPEG or PNG, through the guard), or null: a missing cover is no failure. */
async function coverOf(deps: AudioDeps, url: string, work: string, control: RunControl): Promise<string | null> {
  try {
    const { response } = await guardedFetch(url, {
      ...deps.guard,
      method: 'GET',
      signal: control.signal,
      timeoutMs: 10_000,
    })
    const declared = Number(response.headers.get('content-length'))
    if (response.status !== 200 || !response.body || declared > COVER_MAX_BYTES) {
      void response.body?.cancel().catch(() => {})
      return null
    }
    const chunks: Uint8Array[] = []
    let size = 0
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength
      if (size > COVER_MAX_BYTES) return null
      chunks.push(chunk)
    }
    const bytes = Buffer.concat(chunks)
    const kind =
      bytes[0] === 0xff && bytes[1] === 0xd8
        ? 'jpg'
        : bytes.subarray(0, 4).toString('latin1') === '\x89PNG'
          ? 'png'
          : null
    if (!kind) return null
    const file = join(work, `cover.${kind}`)
    await Bun.write(file, bytes)
    return statSync(file).size > 0 ? file : null
  } catch {
    return null
  }
}
