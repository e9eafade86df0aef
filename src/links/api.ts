// The link methods of the user's document: HTTP parameters in, service call, record out. The service keeps
// the rules a schema cannot state (the service's own origin, reserved aliases, real dates, ownership).
import type { Static } from '@sinclair/typebox'
import { EMBEDDED_ATTRIBUTION } from '../kernel/geo'
import type { ApiMethod } from '../web/api'
import type { AnonymousCreations } from './anonymous'
import { DeletedSchema, ImportSchema, LinkRecordSchema, ListSchema, StatsSchema } from './api-answers'
import {
  aliasParam,
  expireParam,
  maxVisitsParam,
  modeParam,
  passwordParam,
  rulesParam,
  splitParam,
  tagsParam,
  titleParam,
  urlParam,
} from './api-params'
import {
  codeParam,
  domainParam,
  cursorParam,
  dayParam,
  fileParam,
  importFormatParam,
  limitParam,
  listFormatParam,
  queryParam,
  tagFilterParam,
} from './api-method-params'
import { expiredUrlParam, extrasOf, utmParams } from './api-params-extra'
import { csvExportResponse } from './export'
import { DEFAULT_IMPORT_MAX_ROWS, importLinks, MAX_IMPORT_BYTES, recognisedFormat, type ImportFormat } from './import'
import type { LinkService } from './service'
import { ogDescriptionParam, ogImageFile, ogTitleParam } from './api-preview'

export { LinkRecordSchema } from './api-answers'

/** The countries' source, as its licence asks to be credited (SPEC §4): on /api/docs with stats.json. */
const COUNTRY_CREDIT = `Countries are looked up in an IP database embedded in the binary (or the owner's own, \`geo.database\`). ${EMBEDDED_ATTRIBUTION}.`

/** Writes that cannot be stored (a full disk, a read-only database) are refused rather than half done. */
const STORAGE = 'storage_unavailable'

export function linkApi(
  links: LinkService,
  anonymous?: AnonymousCreations,
  importMaxRows: () => number = () => DEFAULT_IMPORT_MAX_ROWS,
): ApiMethod[] {
  const methods: ApiMethod[] = [
    {
      verb: 'POST',
      path: '/api/getLink.json',
      key: 'optional',
      scope: 'links',
      tag: 'links',
      summary: "Create a short link (anonymous without a key; owned by the key's account with one)",
      params: [
        urlParam(true),
        aliasParam,
        modeParam(true),
        expireParam(true),
        passwordParam(true),
        tagsParam(true),
        maxVisitsParam(true),
        rulesParam(true),
        splitParam(true),
        titleParam(true),
        domainParam('create', links.domains.hosts),
        expiredUrlParam(true),
        ...utmParams(true),
        ogTitleParam(true),
        ogDescriptionParam(true),
      ],
      files: [ogImageFile(true)],
      moreExamples: [
        { title: 'A link that stops after 100 visits by people (`max_visits`)', with: ['max_visits'] },
        {
          title: 'A link that sends visitors from Germany, Austria and Switzerland, and phones, elsewhere (`rules`)',
          with: ['rules'],
        },
        { title: 'An A/B test: half the visitors to each of two pages (`split`)', with: ['split'] },
      ],
      returns: LinkRecordSchema,
      errors: {
        401: ['missing_key'],
        409: ['alias_taken', 'alias_reserved'],
        413: ['too_large'],
        503: ['busy', STORAGE],
      },
      handler: async ({ params: p, caller, clientIp }): Promise<Static<typeof LinkRecordSchema>> => {
        // Without a key: refused when links.anonymous is false, and counted against rate.anon_per_day.
        if (!caller) await anonymous?.check(clientIp)
        return links.create(
          {
            url: p.url,
            alias: p.alias,
            mode: p.mode,
            expire: p.expire,
            password: p.password,
            tags: p.tags,
            max_visits: p.max_visits,
            rules: p.rules,
            split: p.split,
            title: p.title,
            domain: p.domain,
            ...extrasOf(p),
            og_title: p.og_title,
            og_description: p.og_description,
            og_image: p.og_image,
          },
          caller,
        )
      },
    },
    {
      verb: 'POST',
      path: '/api/stats.json',
      key: 'optional',
      tag: 'links',
      summary:
        'Statistics of a link: clicks and visitors by day, sources, devices, browsers, operating systems and countries',
      description: `Public, as the statistics page is; at most 366 days at once. ${COUNTRY_CREDIT}`,
      params: [codeParam, domainParam('code', links.domains.hosts), dayParam('from'), dayParam('to')],
      returns: StatsSchema,
      errors: { 404: ['not_found'] },
      handler: ({ params, caller }) =>
        links.stats({ code: params.code, domain: params.domain, from: params.from, to: params.to }, caller),
    },
    {
      verb: 'POST',
      path: '/api/links.json',
      key: 'required',
      scope: 'links',
      tag: 'links',
      summary: "List the caller's links, newest first (by tag, by text), or export them all as CSV",
      params: [
        limitParam,
        cursorParam,
        tagFilterParam,
        queryParam,
        domainParam('filter', links.domains.hosts),
        listFormatParam,
      ],
      queryToo: true,
      returns: ListSchema,
      otherContent: {
        description: 'with format=csv, every link of the caller as a CSV file (an attachment)',
        types: ['text/csv'],
      },
      handler: ({ params, caller }): Promise<Static<typeof ListSchema>> | Response => {
        if (String(params.format ?? '').toLowerCase() === 'csv')
          return csvExportResponse(links.exportPages(caller!), links.now())
        return links.list(
          { limit: params.limit, cursor: params.cursor, tag: params.tag, q: params.q, domain: params.domain },
          caller!,
        )
      },
    },
    {
      verb: 'POST',
      path: '/api/update.json',
      key: 'required',
      scope: 'links',
      tag: 'links',
      summary: 'Change a link: only the fields sent are changed',
      description:
        "Only the owning account's keys (or an admin's) may change a link; anonymous links cannot be changed.",
      params: [
        codeParam,
        domainParam('code', links.domains.hosts),
        urlParam(false),
        modeParam(false),
        expireParam(false),
        passwordParam(false),
        tagsParam(false),
        maxVisitsParam(false),
        rulesParam(false),
        splitParam(false),
        titleParam(false),
        expiredUrlParam(false),
        ...utmParams(false),
        ogTitleParam(false),
        ogDescriptionParam(false),
      ],
      files: [ogImageFile(false)],
      exampleWith: ['url'],
      moreExamples: [
        { title: 'Raise or set the visit limit (`max_visits`; 0 removes it)', with: ['max_visits'] },
        { title: 'Replace the redirect rules (`rules`; [] removes them)', with: ['rules'] },
        { title: 'Replace the A/B split (`split`; [] removes it)', with: ['split'] },
      ],
      returns: LinkRecordSchema,
      errors: { 403: ['not_owner'], 404: ['not_found'], 413: ['too_large'], 503: ['busy', STORAGE] },
      handler: ({ params, caller }): Promise<Static<typeof LinkRecordSchema>> =>
        links.update(
          {
            code: params.code,
            domain: params.domain,
            url: params.url,
            mode: params.mode,
            expire: params.expire,
            password: params.password,
            tags: params.tags,
            max_visits: params.max_visits,
            rules: params.rules,
            split: params.split,
            title: params.title,
            ...extrasOf(params),
            og_title: params.og_title,
            og_description: params.og_description,
            og_image: params.og_image,
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
        'Each row keeps its creation date and title where the format has them (Shlink createdAt and title, Kutt created_at and ' +
        "description, YOURLS timestamp and title, Bitly Date created and Title, linkbox's created and title); tags are folded to " +
        'ASCII where that is faithful (ünïcode: unicode), and a row whose date, title or tags cannot be kept as written is skipped ' +
        'naming the column. Passwords and statistics are not imported. ' +
        `A file over ${MAX_IMPORT_BYTES / 1048576} MiB, or over links.import_max_rows rows (default ${DEFAULT_IMPORT_MAX_ROWS}), is refused (413, naming "file"); ` +
        'one that is not of the format is refused whole (400, naming "file"). One import at a time per account: another one ' +
        "started meanwhile is answered 429 rate_limited with Retry-After. The account's webhooks get one links.imported event " +
        'for the whole file, not a link.created per link.',
      params: [fileParam, importFormatParam],
      upload: { param: 'file', limit: MAX_IMPORT_BYTES, types: ['text/csv', 'application/csv', 'text/plain'] },
      queryToo: true,
      returns: ImportSchema,
      errors: { 413: ['too_large'], 429: ['rate_limited'], 503: ['busy', STORAGE] },
      handler: ({ params, caller }): Promise<Static<typeof ImportSchema>> => {
        const text = params.file as string
        const asked = String(params.format || 'csv').toLowerCase()
        const format = asked === 'auto' ? recognisedFormat(text) : (asked as ImportFormat)
        return importLinks(links, caller!, text, format, { maxRows: importMaxRows() })
      },
    },
    {
      verb: 'POST',
      path: '/api/delete.json',
      key: 'required',
      scope: 'links',
      tag: 'links',
      summary: 'Delete a link and its statistics; the code becomes free again',
      params: [codeParam, domainParam('code', links.domains.hosts)],
      returns: DeletedSchema,
      errors: { 403: ['not_owner'], 404: ['not_found'], 503: [STORAGE] },
      handler: ({ params, caller }) => links.delete({ code: params.code, domain: params.domain }, caller!),
    },
  ]
  // links.json by GET too, its parameters in the query string, so that `links.json?format=csv` downloads the
  // export as the README says (curl -H 'X-Api-Key: …' -OJ); the same method otherwise.
  const list = methods.find((m) => m.path === '/api/links.json')!
  return [...methods, { ...list, verb: 'GET', operationId: 'linksGet', queryToo: undefined }]
}
