// The link methods' answers, each declared once as a schema (the API documents and their examples).
import { Type } from '@sinclair/typebox'
import { CODE_PATTERN, EXAMPLE_BASE } from './api-params'
import { previewRecordFields } from './api-preview'
import { SKIPPED_LISTED } from './import'
import type { LinkRecord } from './record'
import { MAX_TAGS, MAX_TITLE_LENGTH, MODES } from './validate'
import {
  DEVICES,
  MAX_CONDITION_VALUES,
  MAX_RULES,
  MAX_SPLIT,
  MAX_VISITS,
  MAX_WEIGHT,
  MIN_SPLIT,
} from './validate-routing'

const exampleRecord: LinkRecord = {
  hex: 'Ab3dE9',
  url: `${EXAMPLE_BASE}/Ab3dE9`,
  long_url: 'https://example.com/a/long/path?with=query',
  qr: `${EXAMPLE_BASE}/qr/Ab3dE9.png`,
  stats: `${EXAMPLE_BASE}/Ab3dE9+`,
  mode: 'redirect',
  created: '2026-01-31T09:30:00.000Z',
  expires: null,
  expired: false,
  password: false,
  clicks: 42,
  disabled: null,
  tags: ['news', 'spring-sale'],
  max_visits: 100,
  visits_left: 58,
  rules: [{ url: 'https://example.com/de', country: ['DE', 'AT', 'CH'] }],
  title: 'Spring sale 2026',
  domain: new URL(EXAMPLE_BASE).hostname,
  expired_url: null,
  og_title: 'Spring sale: everything half price',
  og_description: 'Until Sunday, in every shop.',
  og_image: `${EXAMPLE_BASE}/_og/Ab3dE9/3f9a0c21d4e7.jpg`,
}

const dateTime = (description: string) => Type.String({ format: 'date-time', description })
const nameCounts = (what: string) =>
  Type.Array(
    Type.Object(
      { name: Type.String({ minLength: 1 }), clicks: Type.Integer({ minimum: 0 }) },
      { additionalProperties: false },
    ),
    { maxItems: 51, description: `${what} over the window, most clicks first: the top 50, the rest as "other"` },
  )

export const LinkRecordSchema = Type.Object(
  {
    hex: Type.String({
      pattern: CODE_PATTERN,
      description:
        'The short code: the part of the short link after its last slash (named `hex` for older clients; it is not hexadecimal). Other methods take it as `code`',
    }),
    url: Type.String({ format: 'uri', description: 'The short link' }),
    long_url: Type.String({ format: 'uri', description: 'The destination' }),
    qr: Type.String({
      format: 'uri',
      description:
        'Its QR code, a PNG at the public address `/qr/<code>.png` (`.svg` for SVG): it opens without a key, so it can go into a page or a mail as it is, and shows the short link only. For other text, use qr.json',
    }),
    stats: Type.String({ format: 'uri', description: 'Its public statistics page' }),
    mode: Type.String({ enum: [...MODES] }),
    created: dateTime('When it was made (UTC)'),
    expires: Type.Union([dateTime('When it stops working (UTC)'), Type.Null()]),
    expired: Type.Boolean(),
    password: Type.Boolean({ description: 'Whether visitors must give a password' }),
    clicks: Type.Integer({ minimum: 0, description: 'Visits by people (bots are not counted)' }),
    disabled: Type.Union([Type.String({ maxLength: 300 }), Type.Null()], {
      description:
        'Null while the link works; else why the administrator disabled it (visitors get a 451 page; clicks and statistics stay)',
    }),
    tags: Type.Array(Type.String({ pattern: '^[a-z0-9_-]{1,32}$' }), {
      maxItems: MAX_TAGS,
      uniqueItems: true,
      description: 'Its tags, sorted; empty without',
    }),
    max_visits: Type.Union([Type.Integer({ minimum: 1, maximum: MAX_VISITS }), Type.Null()], {
      description: 'The visit limit; null: none',
    }),
    visits_left: Type.Union([Type.Integer({ minimum: 0, maximum: MAX_VISITS }), Type.Null()], {
      description: 'Visits by people it still gives (0: it answers 410); null without a limit',
    }),
    rules: Type.Optional(
      Type.Array(
        Type.Object(
          {
            url: Type.String({ format: 'uri' }),
            device: Type.Optional(
              Type.Array(Type.String({ enum: [...DEVICES] }), { minItems: 1, maxItems: MAX_CONDITION_VALUES }),
            ),
            os: Type.Optional(
              Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: MAX_CONDITION_VALUES }),
            ),
            country: Type.Optional(
              Type.Array(Type.String({ pattern: '^[A-Z]{2}$' }), { minItems: 1, maxItems: MAX_CONDITION_VALUES }),
            ),
            language: Type.Optional(
              Type.Array(Type.String({ pattern: '^[a-z]{1,8}$' }), { minItems: 1, maxItems: MAX_CONDITION_VALUES }),
            ),
          },
          { additionalProperties: false },
        ),
        {
          minItems: 1,
          maxItems: MAX_RULES,
          description: 'Its redirect rules, in order (present only when it has some)',
        },
      ),
    ),
    split: Type.Optional(
      Type.Array(
        Type.Object(
          { url: Type.String({ format: 'uri' }), weight: Type.Integer({ minimum: 1, maximum: MAX_WEIGHT }) },
          { additionalProperties: false },
        ),
        { minItems: MIN_SPLIT, maxItems: MAX_SPLIT, description: 'Its A/B split (present only when it has one)' },
      ),
    ),
    title: Type.String({ maxLength: MAX_TITLE_LENGTH, description: 'Its title ("" without)' }),
    domain: Type.String({
      description: "Its short domain's host: base_url's for a link on the default domain",
    }),
    expired_url: Type.Union([Type.String({ format: 'uri' }), Type.Null()], {
      description: 'Where it sends people once expired or its visits are used up; null: the 410 page',
    }),
    ...previewRecordFields,
  },
  { title: 'LinkRecord', additionalProperties: false, examples: [exampleRecord] },
)

export const ListSchema = Type.Object(
  {
    links: Type.Array(LinkRecordSchema, { maxItems: 500, description: 'Newest first' }),
    count: Type.Integer({ minimum: 0, description: "All the caller's links" }),
    next: Type.Union([Type.String({ pattern: '^[0-9]{1,15}$' }), Type.Null()], {
      description: 'The cursor of the next page; null on the last page',
    }),
  },
  { title: 'LinkList', additionalProperties: false, examples: [{ links: [exampleRecord], count: 1, next: null }] },
)

export const StatsSchema = Type.Object(
  {
    hex: Type.String({ pattern: CODE_PATTERN }),
    url: Type.String({ format: 'uri' }),
    long_url: Type.Union([Type.String({ format: 'uri' }), Type.Null()], {
      description: "null for a link with a password, except to the owner's key",
    }),
    created: dateTime('When the link was made (UTC)'),
    clicks: Type.Integer({ minimum: 0, description: 'All-time visits by people' }),
    bots: Type.Integer({ minimum: 0, description: 'All-time visits by bots' }),
    from: Type.String({ format: 'date' }),
    to: Type.String({ format: 'date' }),
    days: Type.Array(
      Type.Object(
        {
          date: Type.String({ format: 'date' }),
          clicks: Type.Integer({ minimum: 0 }),
          visitors: Type.Integer({
            minimum: 0,
            description:
              'Distinct visitors that day, known by a keyed hash of address and user agent whose key is made each UTC day and never stored (exact up to 64, then a HyperLogLog estimate within ~2%). After a restart of the service the key is new: someone who visits before and after it that day counts twice',
          }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 366, description: 'Every day of the window, ascending, zeros included' },
    ),
    sources: nameCounts('Referring hosts ("direct" when none)'),
    devices: nameCounts('desktop, mobile, tablet, other'),
    browsers: nameCounts('Browsers'),
    os: nameCounts('Operating systems'),
    countries: nameCounts(
      'Countries of the visitors\' addresses, ISO 3166-1 alpha-2 ("unknown" when not located; the address is never stored)',
    ),
    destinations: Type.Optional(
      nameCounts(
        'Only for a link with redirect rules or a split: the URL each visit was sent to (the default one included)',
      ),
    ),
  },
  {
    title: 'LinkStats',
    additionalProperties: false,
    examples: [
      {
        hex: 'Ab3dE9',
        url: `${EXAMPLE_BASE}/Ab3dE9`,
        long_url: 'https://example.com/a/long/path?with=query',
        created: '2026-01-30T09:30:00.000Z',
        clicks: 3,
        bots: 1,
        from: '2026-01-30',
        to: '2026-01-31',
        days: [
          { date: '2026-01-30', clicks: 1, visitors: 1 },
          { date: '2026-01-31', clicks: 2, visitors: 1 },
        ],
        sources: [
          { name: 'direct', clicks: 2 },
          { name: 'news.example', clicks: 1 },
        ],
        devices: [{ name: 'mobile', clicks: 3 }],
        browsers: [{ name: 'Firefox', clicks: 3 }],
        os: [{ name: 'Android', clicks: 3 }],
        countries: [
          { name: 'NL', clicks: 2 },
          { name: 'unknown', clicks: 1 },
        ],
      },
    ],
  },
)

export const ImportSchema = Type.Object(
  {
    created: Type.Integer({ minimum: 0, description: 'Links made' }),
    skipped: Type.Array(
      Type.Object(
        {
          line: Type.Integer({
            minimum: 0,
            description: "The row's line in the file (for Kutt's JSON: its place in the list, from 1)",
          }),
          code: Type.String({ description: 'The short code the row asked for ("" for none)' }),
          reason: Type.String({
            description:
              'Why, for programs: alias_taken, alias_reserved, invalid_alias, invalid_url, invalid_mode, invalid_expire, ' +
              'invalid_created, invalid_title, invalid_tag, invalid_row, invalid_parameter, missing_url',
          }),
          message: Type.String({ description: 'Why, for people' }),
        },
        { additionalProperties: false },
      ),
      { maxItems: SKIPPED_LISTED, description: `Rows not imported, in file order: the first ${SKIPPED_LISTED}` },
    ),
    skipped_total: Type.Integer({ minimum: 0, description: 'All rows not imported' }),
    without_password: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          "Links made without the password their file's has_password column said they had (an export never holds passwords: set them again); absent when none",
      }),
    ),
  },
  {
    title: 'ImportResult',
    additionalProperties: false,
    examples: [
      {
        created: 41,
        skipped: [{ line: 7, code: 'spring', reason: 'alias_taken', message: 'The alias "spring" is already in use.' }],
        skipped_total: 1,
      },
    ],
  },
)

export const DeletedSchema = Type.Object(
  { hex: Type.String({ pattern: CODE_PATTERN }), deleted: Type.Literal(true) },
  { title: 'LinkDeleted', additionalProperties: false, examples: [{ hex: 'Ab3dE9', deleted: true }] },
)
