// The five link methods of the user's document: HTTP parameters in, service call, record out. Each
// parameter and each answer is declared here once, as a schema: the /api pipeline checks requests against
// it and the API documents are made from it (see web/schema.ts). The service keeps the rules a schema
// cannot state (the service's own origin, reserved aliases, real dates in the window, ownership).
import { Type, type Static } from '@sinclair/typebox'
import { EMBEDDED_ATTRIBUTION } from '../kernel/geo'
import type { ApiMethod } from '../web/api'
import type { ApiParam } from '../web/schema'
import type { AnonymousCreations } from './anonymous'
import { csvExportResponse, EXPORT_COLUMNS } from './export'
import { DEFAULT_IMPORT_MAX_ROWS, IMPORT_FORMATS, importLinks, MAX_IMPORT_BYTES, SKIPPED_LISTED, type ImportFormat } from './import'
import { LIST_SCAN, MAX_SEARCH_LENGTH, type LinkRecord, type LinkService } from './service'
import {
  CONDITIONS,
  DEVICES,
  MAX_CONDITION_VALUES,
  MAX_EXPIRE,
  MAX_JSON_CHARS,
  MAX_PASSWORD_LENGTH,
  MAX_RULES,
  MAX_SPLIT,
  MAX_TAG_LENGTH,
  MAX_TAGS,
  MAX_TITLE_LENGTH,
  MAX_URL_LENGTH,
  MAX_VISITS,
  MAX_WEIGHT,
  MIN_SPLIT,
  MODES,
} from './validate'

/** The countries' source, as its licence asks to be credited (SPEC §4): on /api/docs with stats.json. */
const COUNTRY_CREDIT = `Countries are looked up in an IP database embedded in the binary (or the owner's own, \`geo.database\`). ${EMBEDDED_ATTRIBUTION}.`

const named = (name: string) => `The parameter "${name}"`
const CODE_PATTERN = '^[A-Za-z0-9_-]+$'
const EXAMPLE_BASE = 'https://sho.rt'

// ---------------------------------------------------------------------------------------------------------
// Parameters

function urlParam(onCreate: boolean): ApiParam {
  return {
    name: 'url',
    required: onCreate,
    absent: onCreate ? ['', null] : [],
    schema: Type.String({
      minLength: 1,
      maxLength: MAX_URL_LENGTH,
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
      description:
        `Destination: an absolute http or https URL with a host, at most ${MAX_URL_LENGTH} characters, without ` +
        'spaces or control characters (percent-encode them), not pointing at this service itself',
      examples: ['https://example.com/a/long/path?with=query'],
    }),
    error: {
      code: 'invalid_url',
      messages: {
        type: `${named('url')} must be a string.`,
        minLength: `${named('url')} must not be empty.`,
        maxLength: `${named('url')} must be at most ${MAX_URL_LENGTH} characters.`,
        default: `${named('url')} must be an absolute URL with the scheme http or https.`,
      },
    },
  }
}

const aliasParam: ApiParam = {
  name: 'alias',
  absent: ['', null],
  schema: Type.String({
    minLength: 2,
    maxLength: 32,
    pattern: CODE_PATTERN,
    description: 'Custom short code instead of a generated one (case-sensitive); reserved words such as "api" are refused (409)',
    examples: ['spring-sale'],
  }),
  error: {
    code: 'invalid_alias',
    messages: {
      type: `${named('alias')} must be a string.`,
      default: `${named('alias')} must be 2 to 32 characters: letters, digits, _ and -.`,
    },
  },
}

function modeParam(onCreate: boolean): ApiParam {
  return {
    name: 'mode',
    absent: onCreate ? ['', null] : [],
    schema: Type.String({
      enum: [...MODES],
      ...(onCreate ? { default: 'redirect' } : {}),
      description: 'redirect: straight to the destination; preview: a page showing it first; frame: it under a slim bar',
      examples: ['preview'],
    }),
    error: {
      code: 'invalid_mode',
      messages: { type: `${named('mode')} must be a string.`, default: `${named('mode')} must be one of: ${MODES.join(', ')}.` },
    },
  }
}

function expireParam(onCreate: boolean): ApiParam {
  return {
    name: 'expire',
    absent: onCreate ? ['', null] : [],
    schema: Type.Integer({
      minimum: 0,
      maximum: MAX_EXPIRE,
      ...(onCreate ? { default: 0 } : {}),
      description: `Lifetime in seconds from ${onCreate ? 'now' : 'this update'}; 0 = no expiry; at most ${MAX_EXPIRE} (10 years)`,
      examples: [86400],
    }),
    error: {
      code: 'invalid_expire',
      messages: {
        default: `${named('expire')} must be a whole number of seconds from 0 (no expiry) to ${MAX_EXPIRE} (10 years).`,
      },
    },
  }
}

function passwordParam(onCreate: boolean): ApiParam {
  return {
    name: 'password',
    schema: Type.String({
      maxLength: MAX_PASSWORD_LENGTH,
      pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]*$',
      description:
        `Password visitors must give: 1-${MAX_PASSWORD_LENGTH} characters, no control characters; ` +
        (onCreate ? '"" = none' : '"" removes it'),
      examples: ['open sesame'],
    }),
    error: {
      code: 'invalid_parameter',
      messages: {
        type: `${named('password')} must be a string.`,
        maxLength: `${named('password')} must be 1 to ${MAX_PASSWORD_LENGTH} characters.`,
        default: `${named('password')} must not contain control characters.`,
      },
    },
  }
}

const TAGS_RULE = `comma-separated, at most ${MAX_TAGS} tags, each 1 to ${MAX_TAG_LENGTH} of letters, digits, _ and - (stored lower-case)`
function tagsParam(onCreate: boolean): ApiParam {
  return {
    name: 'tags',
    absent: onCreate ? ['', null] : [],
    schema: Type.String({
      maxLength: 1000,
      // At most 10 items of 1-32 characters, spaces around the commas allowed; "" is none.
      pattern: '^ *(|[A-Za-z0-9_-]{1,32}( *, *[A-Za-z0-9_-]{1,32}){0,9}) *$',
      description: `Tags: ${TAGS_RULE}; ${onCreate ? 'none by default' : 'replace the link\'s tags; "" removes them'}`,
      examples: ['news,spring-sale'],
    }),
    error: {
      code: 'invalid_parameter',
      messages: {
        type: `${named('tags')} must be a string.`,
        default: `${named('tags')} is invalid: ${TAGS_RULE}.`,
      },
    },
  }
}

function titleParam(onCreate: boolean): ApiParam {
  return {
    name: 'title',
    absent: onCreate ? ['', null] : [null],
    schema: Type.String({
      maxLength: MAX_TITLE_LENGTH,
      pattern: '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$',
      description: `Title: 0 to ${MAX_TITLE_LENGTH} characters, no control characters but line breaks and tabs; ${onCreate ? 'none by default' : '"" removes it'}. links.json's q= searches it`,
      examples: ['Spring sale 2026'],
    }),
    error: {
      code: 'invalid_parameter',
      messages: {
        type: `${named('title')} must be a string.`,
        maxLength: `${named('title')} is invalid: at most ${MAX_TITLE_LENGTH} characters.`,
        default: `${named('title')} is invalid: a title must not contain control characters.`,
      },
    },
  }
}

const VISITS_RULE = `a whole number of visits from 1 to ${MAX_VISITS} (0 or empty: no limit)`
function maxVisitsParam(onCreate: boolean): ApiParam {
  const integer = { minimum: 0, maximum: MAX_VISITS }
  const description =
    `Visit limit: after this many visits by people (bots and link previews use none) the link answers 410; ` +
    (onCreate ? '0 = no limit' : 'changing it keeps the visits already used (raising it opens the link again); 0 or "" removes the limit and its count')
  return {
    name: 'max_visits',
    absent: onCreate ? ['', null] : [null],
    // On update "" removes the limit, as password="" removes a password: a form's blank field means none.
    schema: onCreate
      ? Type.Integer({ ...integer, default: 0, description, examples: [100] })
      : Type.Union([Type.Integer(integer), Type.String({ pattern: '^[0-9]{0,10}$' })], { description, examples: [100] }),
    error: { code: 'invalid_parameter', messages: { default: `${named('max_visits')} must be ${VISITS_RULE}.` } },
  }
}

/** A JSON array as text ("" too, which on update removes); what is in it the service checks, naming the place. */
const JSON_ARRAY = '^(\\[[\\s\\S]*\\])?$'
const RULES_EXAMPLE = '[{"country":["DE","AT","CH"],"url":"https://example.com/de"},{"device":["mobile"],"url":"https://m.example.com/"}]'
function rulesParam(onCreate: boolean): ApiParam {
  return {
    name: 'rules',
    absent: onCreate ? ['', null] : [null],
    schema: Type.String({
      maxLength: MAX_JSON_CHARS,
      pattern: JSON_ARRAY,
      description:
        `Redirect rules: a JSON array (as text) of at most ${MAX_RULES} {"url", ${CONDITIONS.map((c) => `"${c}"?`).join(', ')}}. ` +
        `Each condition is a non-empty list (at most ${MAX_CONDITION_VALUES}) of accepted values — device: ${DEVICES.join(', ')}; ` +
        'os: as statistics name systems (iOS, Android, Windows, Mac OS, Linux…, any letter case); country: ISO 3166-1 alpha-2 ' +
        "(from the visitor's address); language: the primary tag of the first Accept-Language entry (de for de-CH). A rule gives " +
        'at least one condition and matches when all it gives match; the first match decides, none: the split or url. Each ' +
        `rule's url obeys the rules of "url". ${onCreate ? 'None by default' : '[] removes them'}`,
      examples: [RULES_EXAMPLE],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { type: `${named('rules')} must be a string: a JSON array of rules.`, default: `${named('rules')} is invalid: a JSON array of rules, at most ${MAX_JSON_CHARS} characters.` },
    },
  }
}

const SPLIT_EXAMPLE = '[{"url":"https://example.com/a","weight":50},{"url":"https://example.com/b","weight":50}]'
function splitParam(onCreate: boolean): ApiParam {
  return {
    name: 'split',
    absent: onCreate ? ['', null] : [null],
    schema: Type.String({
      maxLength: MAX_JSON_CHARS,
      pattern: JSON_ARRAY,
      description:
        `A/B split: a JSON array (as text) of ${MIN_SPLIT} to ${MAX_SPLIT} {"url", "weight" (1-${MAX_WEIGHT})}; visitors no rule ` +
        'sends elsewhere go to one by weight, the same visitor to the same one all day. url stays the fallback and the ' +
        `address preview pages and statistics show. ${onCreate ? 'None by default' : '[] removes it'}`,
      examples: [SPLIT_EXAMPLE],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { type: `${named('split')} must be a string: a JSON array of destinations.`, default: `${named('split')} is invalid: a JSON array of destinations, at most ${MAX_JSON_CHARS} characters.` },
    },
  }
}

const tagFilterParam: ApiParam = {
  name: 'tag',
  absent: ['', null],
  schema: Type.String({
    minLength: 1,
    maxLength: MAX_TAG_LENGTH,
    pattern: '^[A-Za-z0-9_-]+$',
    description: 'Only links with this tag (any letter case)',
    examples: ['news'],
  }),
  error: { code: 'invalid_parameter', messages: { default: `${named('tag')} is invalid: a tag, 1 to ${MAX_TAG_LENGTH} of letters, digits, _ and -.` } },
}

const queryParam: ApiParam = {
  name: 'q',
  absent: ['', null],
  schema: Type.String({
    maxLength: MAX_SEARCH_LENGTH,
    description:
      'Only links whose code, destination, title or a tag contains this text (letter case ignored). Each page looks at ' +
      `no more than ${LIST_SCAN} links, so a page may hold fewer than "limit" links while "next" goes on`,
    examples: ['spring'],
  }),
  error: { code: 'invalid_parameter', messages: { default: `${named('q')} is invalid: text of at most ${MAX_SEARCH_LENGTH} characters.` } },
}

const listFormatParam: ApiParam = {
  name: 'format',
  absent: ['', null],
  caseInsensitive: true,
  schema: Type.String({
    enum: ['json', 'csv'],
    default: 'json',
    description:
      `csv: every link of the caller (not a page: limit, cursor, tag and q do not apply) as a CSV file, text/csv, ` +
      `RFC 4180 with a header row: ${EXPORT_COLUMNS.join(',')}. May be given in the query string (links.json?format=csv)`,
    examples: ['csv'],
  }),
  error: { code: 'invalid_parameter', messages: { default: `${named('format')} must be json or csv.` } },
}

const fileParam: ApiParam = {
  name: 'file',
  required: true,
  absent: [''],
  schema: Type.String({
    description:
      `The file, UTF-8, at most ${MAX_IMPORT_BYTES / 1048576} MiB: a multipart file field, or the whole body sent as text/csv ` +
      '(then give "format" in the query string)',
    examples: ['long_url,tags\r\nhttps://example.com/a/long/path,news\r\n'],
  }),
  error: { code: 'invalid_parameter', messages: { type: `${named('file')} must be a file or text.`, default: `${named('file')} is invalid.` } },
}

const importFormatParam: ApiParam = {
  name: 'format',
  absent: ['', null],
  caseInsensitive: true,
  schema: Type.String({
    enum: [...IMPORT_FORMATS],
    default: 'csv',
    description:
      "csv: linkbox's own export (only long_url is required; code, mode, created, expires, tags, max_visits and title are read); shlink: the web " +
      "client's CSV export; kutt: the answer of Kutt's GET /api/v2/links (JSON) or a CSV with its field names; yourls: " +
      'the yourls_url table as CSV (keyword, url, …); bitly: the CSV export of Bitly links',
    examples: ['shlink'],
  }),
  error: { code: 'invalid_parameter', messages: { default: `${named('format')} must be one of: ${IMPORT_FORMATS.join(', ')}.` } },
}

const codeParam: ApiParam = {
  name: 'code',
  required: true,
  absent: [''],
  schema: Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: CODE_PATTERN,
    description: 'Short code of the link (the "hex" of its record; case-sensitive)',
    examples: ['Ab3dE9'],
  }),
  error: {
    code: 'invalid_parameter',
    messages: {
      type: `${named('code')} must be a string.`,
      default: `${named('code')} must be a short code: letters, digits, _ and -.`,
    },
  },
}

function dayParam(name: 'from' | 'to'): ApiParam {
  return {
    name,
    absent: ['', null],
    schema: Type.String({
      format: 'date',
      // Years 1970-9999: statistics cannot predate the service, and every day stays a plain YYYY-MM-DD.
      pattern: '^(19[7-9][0-9]|[2-9][0-9]{3})-[0-9]{2}-[0-9]{2}$',
      description:
        name === 'from'
          ? 'First day (UTC); default 29 days before "to"; at most 366 days before "to"'
          : 'Last day (UTC); default today',
      examples: [name === 'from' ? '2026-01-01' : '2026-01-31'],
    }),
    error: {
      code: 'invalid_parameter',
      messages: { default: `${named(name)} is invalid: a date as YYYY-MM-DD (UTC), from 1970-01-01 to 9999-12-31.` },
    },
  }
}

const limitParam: ApiParam = {
  name: 'limit',
  absent: ['', null],
  schema: Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'Links per page', examples: [50] }),
  error: { code: 'invalid_parameter', messages: { default: `${named('limit')} is invalid: a whole number from 1 to 500.` } },
}

const MAX_CURSOR = 999_999_999_999_999
const cursorParam: ApiParam = {
  name: 'cursor',
  absent: ['', null],
  schema: Type.Union(
    [Type.String({ pattern: '^[0-9]{1,15}$' }), Type.Integer({ minimum: 0, maximum: MAX_CURSOR })],
    { description: 'The "next" value of the previous page; absent for the first page', examples: ['1234'] },
  ),
  error: {
    code: 'invalid_parameter',
    messages: { default: `${named('cursor')} is invalid: the "next" value of a previous answer.` },
  },
}

// ---------------------------------------------------------------------------------------------------------
// Answers

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
    hex: Type.String({ pattern: CODE_PATTERN, description: 'The short code' }),
    url: Type.String({ format: 'uri', description: 'The short link' }),
    long_url: Type.String({ format: 'uri', description: 'The destination' }),
    qr: Type.String({ format: 'uri', description: 'Its QR code (PNG)' }),
    stats: Type.String({ format: 'uri', description: 'Its public statistics page' }),
    mode: Type.String({ enum: [...MODES] }),
    created: dateTime('When it was made (UTC)'),
    expires: Type.Union([dateTime('When it stops working (UTC)'), Type.Null()]),
    expired: Type.Boolean(),
    password: Type.Boolean({ description: 'Whether visitors must give a password' }),
    clicks: Type.Integer({ minimum: 0, description: 'Visits by people (bots are not counted)' }),
    disabled: Type.Union([Type.String({ maxLength: 300 }), Type.Null()], {
      description: 'Null while the link works; else why the administrator disabled it (visitors get a 451 page; clicks and statistics stay)',
    }),
    tags: Type.Array(Type.String({ pattern: '^[a-z0-9_-]{1,32}$' }), { maxItems: MAX_TAGS, uniqueItems: true, description: 'Its tags, sorted; empty without' }),
    max_visits: Type.Union([Type.Integer({ minimum: 1, maximum: MAX_VISITS }), Type.Null()], { description: 'The visit limit; null: none' }),
    visits_left: Type.Union([Type.Integer({ minimum: 0, maximum: MAX_VISITS }), Type.Null()], {
      description: 'Visits by people it still gives (0: it answers 410); null without a limit',
    }),
    rules: Type.Optional(
      Type.Array(
        Type.Object(
          {
            url: Type.String({ format: 'uri' }),
            device: Type.Optional(Type.Array(Type.String({ enum: [...DEVICES] }), { minItems: 1, maxItems: MAX_CONDITION_VALUES })),
            os: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: MAX_CONDITION_VALUES })),
            country: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Z]{2}$' }), { minItems: 1, maxItems: MAX_CONDITION_VALUES })),
            language: Type.Optional(Type.Array(Type.String({ pattern: '^[a-z]{1,8}$' }), { minItems: 1, maxItems: MAX_CONDITION_VALUES })),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: MAX_RULES, description: 'Its redirect rules, in order (present only when it has some)' },
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
  },
  { title: 'LinkRecord', additionalProperties: false, examples: [exampleRecord] },
)

const ListSchema = Type.Object(
  {
    links: Type.Array(LinkRecordSchema, { maxItems: 500, description: 'Newest first' }),
    count: Type.Integer({ minimum: 0, description: "All the caller's links" }),
    next: Type.Union([Type.String({ pattern: '^[0-9]{1,15}$' }), Type.Null()], {
      description: 'The cursor of the next page; null on the last page',
    }),
  },
  { title: 'LinkList', additionalProperties: false, examples: [{ links: [exampleRecord], count: 1, next: null }] },
)

const StatsSchema = Type.Object(
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
    countries: nameCounts('Countries of the visitors\' addresses, ISO 3166-1 alpha-2 ("unknown" when not located; the address is never stored)'),
    destinations: Type.Optional(
      nameCounts('Only for a link with redirect rules or a split: the URL each visit was sent to (the default one included)'),
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
        days: [{ date: '2026-01-30', clicks: 1, visitors: 1 }, { date: '2026-01-31', clicks: 2, visitors: 1 }],
        sources: [{ name: 'direct', clicks: 2 }, { name: 'news.example', clicks: 1 }],
        devices: [{ name: 'mobile', clicks: 3 }],
        browsers: [{ name: 'Firefox', clicks: 3 }],
        os: [{ name: 'Android', clicks: 3 }],
        countries: [{ name: 'NL', clicks: 2 }, { name: 'unknown', clicks: 1 }],
      },
    ],
  },
)

const ImportSchema = Type.Object(
  {
    created: Type.Integer({ minimum: 0, description: 'Links made' }),
    skipped: Type.Array(
      Type.Object(
        {
          line: Type.Integer({ minimum: 0, description: "The row's line in the file (for Kutt's JSON: its place in the list, from 1)" }),
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
  },
  {
    title: 'ImportResult',
    additionalProperties: false,
    examples: [{ created: 41, skipped: [{ line: 7, code: 'spring', reason: 'alias_taken', message: 'The alias "spring" is already in use.' }], skipped_total: 1 }],
  },
)

const DeletedSchema = Type.Object(
  { hex: Type.String({ pattern: CODE_PATTERN }), deleted: Type.Literal(true) },
  { title: 'LinkDeleted', additionalProperties: false, examples: [{ hex: 'Ab3dE9', deleted: true }] },
)

// ---------------------------------------------------------------------------------------------------------
// Methods

/** Writes that cannot be stored (a full disk, a read-only database) are refused rather than half done. */
const STORAGE = 'storage_unavailable'

export function linkApi(links: LinkService, anonymous?: AnonymousCreations, importMaxRows: () => number = () => DEFAULT_IMPORT_MAX_ROWS): ApiMethod[] {
  const methods: ApiMethod[] = [
    {
      verb: 'POST',
      path: '/api/getLink.json',
      key: 'optional',
      scope: 'links',
      tag: 'links',
      summary: 'Create a short link (anonymous without a key; owned by the key\'s account with one)',
      params: [urlParam(true), aliasParam, modeParam(true), expireParam(true), passwordParam(true), tagsParam(true), maxVisitsParam(true), rulesParam(true), splitParam(true), titleParam(true)],
      moreExamples: [
        { title: 'A link that stops after 100 visits by people (`max_visits`)', with: ['max_visits'] },
        { title: 'A link that sends visitors from Germany, Austria and Switzerland, and phones, elsewhere (`rules`)', with: ['rules'] },
        { title: 'An A/B test: half the visitors to each of two pages (`split`)', with: ['split'] },
      ],
      returns: LinkRecordSchema,
      errors: { 409: ['alias_taken', 'alias_reserved'], 503: ['busy', STORAGE] },
      handler: async ({ params: p, caller, clientIp }): Promise<Static<typeof LinkRecordSchema>> => {
        // Without a key: refused when links.anonymous is false, and counted against rate.anon_per_day.
        if (!caller) await anonymous?.check(clientIp)
        return links.create(
          { url: p.url, alias: p.alias, mode: p.mode, expire: p.expire, password: p.password, tags: p.tags, max_visits: p.max_visits, rules: p.rules, split: p.split, title: p.title },
          caller,
        )
      },
    },
    {
      verb: 'POST',
      path: '/api/stats.json',
      key: 'optional',
      tag: 'links',
      summary: 'Statistics of a link: clicks and visitors by day, sources, devices, browsers, operating systems and countries',
      description: `Public, as the statistics page is; at most 366 days at once. ${COUNTRY_CREDIT}`,
      params: [codeParam, dayParam('from'), dayParam('to')],
      returns: StatsSchema,
      errors: { 404: ['not_found'] },
      handler: ({ params, caller }) => links.stats({ code: params.code, from: params.from, to: params.to }, caller),
    },
    {
      verb: 'POST',
      path: '/api/links.json',
      key: 'required',
      scope: 'links',
      tag: 'links',
      summary: "List the caller's links, newest first (by tag, by text), or export them all as CSV",
      params: [limitParam, cursorParam, tagFilterParam, queryParam, listFormatParam],
      queryToo: true,
      returns: ListSchema,
      otherContent: { description: 'with format=csv, every link of the caller as a CSV file (an attachment)', types: ['text/csv'] },
      handler: ({ params, caller }): Promise<Static<typeof ListSchema>> | Response => {
        if (String(params.format ?? '').toLowerCase() === 'csv') return csvExportResponse(links.exportPages(caller!), links.now())
        return links.list({ limit: params.limit, cursor: params.cursor, tag: params.tag, q: params.q }, caller!)
      },
    },
    {
      verb: 'POST',
      path: '/api/update.json',
      key: 'required',
      scope: 'links',
      tag: 'links',
      summary: 'Change a link: only the fields sent are changed',
      description: "Only the owning account's keys (or an admin's) may change a link; anonymous links cannot be changed.",
      params: [codeParam, urlParam(false), modeParam(false), expireParam(false), passwordParam(false), tagsParam(false), maxVisitsParam(false), rulesParam(false), splitParam(false), titleParam(false)],
      exampleWith: ['url'],
      moreExamples: [
        { title: 'Raise or set the visit limit (`max_visits`; 0 removes it)', with: ['max_visits'] },
        { title: 'Replace the redirect rules (`rules`; [] removes them)', with: ['rules'] },
        { title: 'Replace the A/B split (`split`; [] removes it)', with: ['split'] },
      ],
      returns: LinkRecordSchema,
      errors: { 403: ['not_owner'], 404: ['not_found'], 503: [STORAGE] },
      handler: ({ params, caller }): Promise<Static<typeof LinkRecordSchema>> =>
        links.update(
          {
            code: params.code, url: params.url, mode: params.mode, expire: params.expire, password: params.password, tags: params.tags,
            max_visits: params.max_visits, rules: params.rules, split: params.split, title: params.title,
          },
          caller!,
        ),
    },
    {
      verb: 'POST',
      path: '/api/import.json',
      key: 'required',
      scope: 'links',
      tag: 'links',
      summary: "Import links from a file: linkbox's own CSV export, or Shlink's, Kutt's, YOURLS' or Bitly's",
      description:
        'Each row is made as getLink.json makes a link (the same URL rules and checks). A code is kept ' +
        'when it is free and valid here; a row whose code is taken, reserved or invalid is skipped, never overwritten. ' +
        "Each row keeps its creation date and title where the format has them (Shlink createdAt and title, Kutt created_at and " +
        "description, YOURLS timestamp and title, Bitly Date created and Title, linkbox's created and title); tags are folded to " +
        'ASCII where that is faithful (ünïcode: unicode), and a row whose date, title or tags cannot be kept as written is skipped ' +
        'naming the column. Passwords and statistics are not imported. ' +
        `A file over ${MAX_IMPORT_BYTES / 1048576} MiB, or over links.import_max_rows rows (default ${DEFAULT_IMPORT_MAX_ROWS}), is refused (413, naming "file"); ` +
        'one that is not of the format is refused whole (400, naming "file"). One import at a time per account: another one ' +
        'started meanwhile is answered 429 rate_limited with Retry-After. The account\'s webhooks get one links.imported event ' +
        'for the whole file, not a link.created per link.',
      params: [fileParam, importFormatParam],
      upload: { param: 'file', limit: MAX_IMPORT_BYTES, types: ['text/csv', 'application/csv', 'text/plain'] },
      queryToo: true,
      returns: ImportSchema,
      errors: { 413: ['too_large'], 429: ['rate_limited'], 503: ['busy', STORAGE] },
      handler: ({ params, caller }): Promise<Static<typeof ImportSchema>> => {
        const format = (String(params.format || 'csv').toLowerCase()) as ImportFormat
        return importLinks(links, caller!, params.file as string, format, { maxRows: importMaxRows() })
      },
    },
    {
      verb: 'POST',
      path: '/api/delete.json',
      key: 'required',
      scope: 'links',
      tag: 'links',
      summary: 'Delete a link and its statistics; the code becomes free again',
      params: [codeParam],
      returns: DeletedSchema,
      errors: { 403: ['not_owner'], 404: ['not_found'], 503: [STORAGE] },
      handler: ({ params, caller }) => links.delete({ code: params.code }, caller!),
    },
  ]
  // links.json by GET too, its parameters in the query string, so that `links.json?format=csv` downloads the
  // export as the README says (curl -H 'X-Api-Key: …' -OJ); the same method otherwise.
  const list = methods.find((m) => m.path === '/api/links.json')!
  return [...methods, { ...list, verb: 'GET', operationId: 'linksGet', queryToo: undefined }]
}
