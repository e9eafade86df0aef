// GET /api/download.json and the signed links its answers carry (/dl/<id>): the parameter and the answer declared
// once as schemas, which check requests and make the API documents.
import { Type, type TSchema } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import type { ApiMethod } from '../web/api'
import { AppError, invalidParameter } from '../kernel/errors'
import { errorResponse } from '../web/api'
import { queryParams } from '../web/params'
import { MAX_URL_LENGTH } from '../links'
import type { Preparation } from './prepare'
import { progressStream } from './progress'
import type { MediaService } from './service'
import type { TicketRow } from './storage/contract'

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()])

const FormatSchema = Type.Object(
  {
    id: Type.String({
      description:
        "The format's id at the site (yt-dlp's format_id); a merge of two is `video+audio`; audio extracted from " +
        'a format is `<its id>/<ext>` (mp3, m4a or opus)',
    }),
    ext: Type.String({ description: 'File extension' }),
    kind: Type.Union([
      Type.Literal('video+audio'),
      Type.Literal('video'),
      Type.Literal('audio'),
      Type.Literal('photo'),
    ]),
    width: Nullable(Type.Integer({ minimum: 0 })),
    height: Nullable(Type.Integer({ minimum: 0 })),
    fps: Nullable(Type.Number({ minimum: 0 })),
    vcodec: Type.Union([Type.String(), Type.Null()], { description: 'Video codec, null when none or unknown' }),
    acodec: Type.Union([Type.String(), Type.Null()], { description: 'Audio codec, null when none or unknown' }),
    filesize: Nullable(Type.Integer({ minimum: 0, description: 'Bytes, exact or estimated; null when unknown' })),
    note: Type.String({
      description:
        'A short human label (e.g. "720p", "audio only"); extracted audio says so: "audio only, extracted (mp3)"',
    }),
    url: Type.String({
      format: 'uri',
      description:
        'A signed link: GET or HEAD it without a key until `expires` (Range works). Segmented and merged formats are ' +
        'fetched whole first, and extracted audio is converted first, so their first byte may take a while: ' +
        '`<url path>/progress` with the same query follows that as server-sent events',
    }),
  },
  { additionalProperties: false },
)

const SubtitleSchema = Type.Object(
  {
    lang: Type.String({ description: 'The language code the site gives (e.g. "en", "pt-BR")' }),
    name: Type.String({ description: "The site's name for it, else the language's English name, else the code" }),
    ext: Type.Union([Type.Literal('vtt'), Type.Literal('srt')], {
      description: "vtt: the site's WebVTT file; srt: SubRip made from it by this service",
    }),
    auto: Type.Boolean({
      description: "true: the site's automatic captions (speech recognition, machine translation)",
    }),
    url: Type.String({ format: 'uri', description: "A signed link, as a format's (the file whole: no Range)" }),
  },
  { additionalProperties: false },
)

const EntrySchema = Type.Object(
  {
    index: Type.Integer({ minimum: 1, description: "The entry's place in the playlist, from 1" }),
    title: Type.String(),
    duration: Nullable(Type.Number({ minimum: 0, description: 'Seconds' })),
    thumbnail: Type.Union([Type.String({ format: 'uri' }), Type.Null()]),
    formats: Type.Array(FormatSchema, { description: "As a single video's (at most the best 20)" }),
  },
  { additionalProperties: false },
)

/** The fields only a single video's answer has, and those only a playlist's (playlist=1) has. */
const SINGLE = ['kind', 'duration', 'thumbnail', 'formats', 'subtitles']
const PLAYLIST = ['count', 'truncated', 'entries']

const DownloadSchema = Type.Object(
  {
    source: Type.String({ format: 'uri', description: 'The page (or playlist) the media was found on' }),
    title: Type.String({ description: "The video's title, or with playlist=1 the playlist's" }),
    kind: Type.Optional(Type.Union([Type.Literal('video'), Type.Literal('audio'), Type.Literal('photo')])),
    extractor: Type.String({
      description: 'Which of yt-dlp\'s extractors read the page ("og:image" for a photo found by its preview tags)',
    }),
    duration: Type.Optional(Nullable(Type.Number({ minimum: 0, description: 'Seconds' }))),
    thumbnail: Type.Optional(Type.Union([Type.String({ format: 'uri' }), Type.Null()])),
    expires: Type.String({
      format: 'date-time',
      description: 'When the links stop working (media.link_ttl after this answer)',
    }),
    formats: Type.Optional(Type.Array(FormatSchema, { description: 'Worst first, best last, as yt-dlp orders them' })),
    subtitles: Type.Optional(
      Type.Array(SubtitleSchema, {
        description: 'Each language as vtt and as srt, written ones before automatic captions (at most 50 languages)',
      }),
    ),
    count: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'playlist=1: the entries the playlist has, as the site counts them (else as many as were read)',
      }),
    ),
    truncated: Type.Optional(
      Type.Boolean({ description: 'playlist=1: true when it has more entries than media.playlist_max' }),
    ),
    entries: Type.Optional(
      Type.Array(EntrySchema, {
        description:
          'playlist=1: at most media.playlist_max, in order; an entry with nothing that may be fetched is left out',
      }),
    ),
  },
  {
    title: 'Download',
    description:
      'A single video (kind, duration, thumbnail, formats, subtitles) or, with playlist=1, a playlist (count, ' +
      'truncated, entries); source, title, extractor and expires in both',
    additionalProperties: false,
    // Either set of fields, whole (their schemas are the properties above).
    oneOf: [SINGLE, PLAYLIST].map((fields) => ({
      properties: Object.fromEntries(fields.map((f) => [f, {}])),
      required: fields,
    })),
    examples: [
      {
        source: 'https://video.example.com/watch/42',
        title: 'A walk in the park',
        kind: 'video',
        extractor: 'Generic',
        duration: 61.5,
        thumbnail: 'https://video.example.com/thumbs/42.jpg',
        expires: '2026-01-31T10:30:00.000Z',
        formats: [
          {
            id: 'mp4-720p',
            ext: 'mp4',
            kind: 'video+audio',
            width: 1280,
            height: 720,
            fps: 30,
            vcodec: 'avc1.64001f',
            acodec: 'mp4a.40.2',
            filesize: 10485760,
            note: '720p',
            url: 'https://sho.rt/dl/42?exp=1769855400&sig=7yKx2l3m0Vh0m3a9c8b7a6Z5Y4X3W2V1U0T9S8R7Q6P',
          },
        ],
        subtitles: [
          {
            lang: 'en',
            name: 'English',
            ext: 'srt',
            auto: false,
            url: 'https://sho.rt/dl/44?exp=1769855400&sig=Qm9vcGJlZXBib29wYmVlcGJvb3BiZWVwYm9vcGJlZXA',
          },
        ],
      },
    ],
  },
)

export function mediaApi(media: MediaService): ApiMethod[] {
  return [
    {
      verb: 'GET',
      path: '/api/download.json',
      key: 'required',
      scope: 'media',
      marketplace: true,
      tag: 'media',
      summary: 'The video, audio or photo of a page: its formats, with signed download links',
      description:
        'yt-dlp reads the page (1000+ sites; any page with a `<video>` or an `og:video`; a direct media file); a page it ' +
        'cannot read that names a picture (`og:image`, `twitter:image`) gives that photo. Results are kept 10 minutes per ' +
        'URL. The links stream the bytes through this service, so they work where the site binds its own links to the ' +
        'address that asked. Only public addresses are fetched.',
      params: [
        {
          name: 'url',
          required: true,
          absent: ['', null],
          schema: Type.String({
            minLength: 1,
            maxLength: MAX_URL_LENGTH,
            pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
            description: `The page (or file): an absolute http or https URL, at most ${MAX_URL_LENGTH} characters, without spaces or control characters (percent-encode them)`,
            examples: ['https://video.example.com/watch/42'],
          }),
          error: {
            code: 'invalid_url',
            messages: {
              type: 'The parameter "url" must be a string.',
              minLength: 'The parameter "url" must not be empty.',
              maxLength: `The parameter "url" must be at most ${MAX_URL_LENGTH} characters.`,
              default: 'The parameter "url" must be an absolute URL with the scheme http or https.',
            },
          },
        },
        {
          name: 'playlist',
          absent: ['', null],
          schema: Type.Boolean({
            default: false,
            description:
              'true or 1: a playlist, or a page with several videos, as its entries (at most media.playlist_max, each ' +
              'with formats of its own); false or 0: its first video alone',
          }),
          error: {
            code: 'invalid_parameter',
            messages: {
              default: invalidParameter('playlist', 'it must be 1 (the entries) or 0 (the first video)').message,
            },
          },
        },
        {
          name: 'audio',
          absent: ['', null],
          schema: Type.Boolean({
            default: false,
            description:
              "true or 1: list only audio — the page's own audio-only formats and the audio extracted from its best " +
              'sound as mp3, m4a and opus (converted by ffmpeg on the first download, tagged with the title, the ' +
              'artist where known and, in mp3 and m4a, the thumbnail as cover); with playlist=1, in each entry',
            examples: [true],
          }),
          error: {
            code: 'invalid_parameter',
            messages: { default: invalidParameter('audio', 'it must be 1 (only audio) or 0 (every format)').message },
          },
        },
      ],
      returns: DownloadSchema,
      errors: {
        400: ['unsupported_url', 'private_address'],
        502: ['upstream_failed'],
        503: ['busy', 'unavailable', 'storage_unavailable'],
        504: ['timeout'],
      },
      handler: ({ params, caller }) =>
        [true, '1', 'true'].includes(params.playlist as string)
          ? media.playlist(caller!, params.url as string, {
              audio: [true, '1', 'true'].includes(params.audio as string),
            })
          : media.download(caller!, params.url as string, {
              audio: [true, '1', 'true'].includes(params.audio as string),
            }),
    },
  ]
}

/** GET and HEAD /dl/<id>?exp=&sig=: the file behind a signed link, always as a download. */
export function createMediaRoutes(media: MediaService) {
  const serve = async ({ params, request }: { params: { id: string }; request: Request }) => {
    const query = queryParams(request.url)
    const text = (v: unknown) => (typeof v === 'string' ? v : null)
    const ticket = await media.ticket(params.id, text(query.exp), text(query.sig))
    return media.serve(ticket, request)
  }
  /** The progress contract of issue 41: the signed query checked first (403/410/404 as JSON), then events. */
  const progress = async ({ params, request }: { params: { id: string }; request: Request }) => {
    const query = queryParams(request.url)
    const text = (v: unknown) => (typeof v === 'string' ? v : null)
    let ticket: TicketRow
    let prep: Preparation | null
    const leave = new AbortController()
    try {
      ticket = await media.ticket(params.id, text(query.exp), text(query.sig))
      prep = media.prepare(ticket, leave.signal)
    } catch (err) {
      leave.abort()
      // Before any stream starts, an error is the JSON envelope (the progress contract), not /dl's page.
      if (err instanceof AppError) return errorResponse(err)
      throw err
    }
    // An event stream is held open (it sends a comment every 15 s when nothing changes).
    media.holdOpen(request, 0)
    const stop = () => leave.abort()
    request.signal.addEventListener('abort', stop, { once: true })
    leave.signal.addEventListener(
      'abort',
      () => {
        request.signal.removeEventListener('abort', stop)
        media.holdOpen(request, 10) // the server's idle timeout again, for the connection's next request
      },
      { once: true },
    )
    const link = `${media.base}/dl/${ticket.id}?exp=${encodeURIComponent(text(query.exp)!)}&sig=${encodeURIComponent(text(query.sig)!)}`
    return progressStream(prep, link, leave)
  }
  return new Elysia({ name: 'media-files' })
    .get('/dl/:id', serve)
    .head('/dl/:id', serve)
    .get('/dl/:id/progress', progress)
}
