// The parameters of the link methods other than a link's own fields: the list's filters and pages (tag, q,
// format, limit, cursor), an import's file and format, a link's code and the statistics' days.
import { Type } from '@sinclair/typebox'
import type { ApiParam } from '../web/schema'
import { CODE_PATTERN, named } from './api-params'
import { EXPORT_COLUMNS } from './export'
import { IMPORT_FORMATS, MAX_IMPORT_BYTES } from './import'
import { LIST_SCAN, MAX_SEARCH_LENGTH } from './listing'
import { MAX_TAG_LENGTH } from './validate'

export const tagFilterParam: ApiParam = {
  name: 'tag',
  absent: ['', null],
  schema: Type.String({
    minLength: 1,
    maxLength: MAX_TAG_LENGTH,
    pattern: '^[A-Za-z0-9_-]+$',
    description: 'Only links with this tag (any letter case)',
    examples: ['news'],
  }),
  error: {
    code: 'invalid_parameter',
    messages: { default: `${named('tag')} is invalid: a tag, 1 to ${MAX_TAG_LENGTH} of letters, digits, _ and -.` },
  },
}

export const queryParam: ApiParam = {
  name: 'q',
  absent: ['', null],
  schema: Type.String({
    maxLength: MAX_SEARCH_LENGTH,
    description:
      'Only links whose code, destination, title or a tag contains this text (letter case ignored). Each page looks at ' +
      `no more than ${LIST_SCAN} links, so a page may hold fewer than "limit" links while "next" goes on`,
    examples: ['spring'],
  }),
  error: {
    code: 'invalid_parameter',
    messages: { default: `${named('q')} is invalid: text of at most ${MAX_SEARCH_LENGTH} characters.` },
  },
}

export const listFormatParam: ApiParam = {
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

export const fileParam: ApiParam = {
  name: 'file',
  required: true,
  absent: [''],
  schema: Type.String({
    description:
      `The file, UTF-8, at most ${MAX_IMPORT_BYTES / 1048576} MiB: a multipart file field, or the whole body sent as text/csv ` +
      '(then give "format" in the query string)',
    examples: ['long_url,tags\r\nhttps://example.com/a/long/path,news\r\n'],
  }),
  error: {
    code: 'invalid_parameter',
    messages: { type: `${named('file')} must be a file or text.`, default: `${named('file')} is invalid.` },
  },
}

export const importFormatParam: ApiParam = {
  name: 'format',
  absent: ['', null],
  caseInsensitive: true,
  schema: Type.String({
    enum: [...IMPORT_FORMATS, 'auto'],
    default: 'csv',
    description:
      "csv: linkbox's own export (only long_url is required; code, mode, created, expires, tags, max_visits, title, rules, split and expired_url are read; " +
      'has_password is not a password: such links are made without one); shlink: the web ' +
      "client's CSV export; kutt: the answer of Kutt's GET /api/v2/links (JSON) or a CSV with its field names; yourls: " +
      'the yourls_url table as CSV (keyword, url, …); bitly: the CSV export of Bitly links; auto: recognised from the ' +
      'header row (JSON is kutt; a file not recognised is refused, 400 naming "file")',
    examples: ['shlink'],
  }),
  error: {
    code: 'invalid_parameter',
    messages: { default: `${named('format')} must be one of: ${[...IMPORT_FORMATS, 'auto'].join(', ')}.` },
  },
}

export const codeParam: ApiParam = {
  name: 'code',
  required: true,
  absent: [''],
  schema: Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: CODE_PATTERN,
    description:
      'Short code of the link: the `hex` of its record, the part of its short link after the last slash (case-sensitive)',
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

export function dayParam(name: 'from' | 'to'): ApiParam {
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

export const limitParam: ApiParam = {
  name: 'limit',
  absent: ['', null],
  schema: Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'Links per page', examples: [50] }),
  error: {
    code: 'invalid_parameter',
    messages: { default: `${named('limit')} is invalid: a whole number from 1 to 500.` },
  },
}

const MAX_CURSOR = 999_999_999_999_999
export const cursorParam: ApiParam = {
  name: 'cursor',
  absent: ['', null],
  schema: Type.Union([Type.String({ pattern: '^[0-9]{1,15}$' }), Type.Integer({ minimum: 0, maximum: MAX_CURSOR })], {
    description: 'The "next" value of the previous page; absent for the first page',
    examples: ['1234'],
  }),
  error: {
    code: 'invalid_parameter',
    messages: { default: `${named('cursor')} is invalid: the "next" value of a previous answer.` },
  },
}

/**
 * The short domain (SPEC §13): on getLink.json the new link's, elsewhere the domain of `code` (codes are unique per
 * domain) or links.json's filter: one of `hosts`, this server's (base_url's host and server.domains).
 */
export function domainParam(purpose: 'create' | 'code' | 'filter', hosts: readonly string[]): ApiParam {
  const what = {
    create: "The short domain of the new link: base_url's host (the default) or one of server.domains",
    code: "The short domain of the link: its record's `domain` (absent: base_url's host, the default domain)",
    filter: "Only the links of this short domain (base_url's host, or one of server.domains)",
  }[purpose]
  return {
    name: 'domain',
    absent: ['', null],
    // This server's hosts (base_url's first): the document names the values it takes.
    schema: Type.String({ enum: [...hosts], description: what, examples: [hosts[hosts.length - 1]!] }),
    error: {
      code: 'invalid_parameter',
      messages: {
        type: `${named('domain')} must be a string.`,
        default: `${named('domain')} is invalid: it must be one of this service's short domains (${hosts.join(', ')}).`,
      },
    },
  }
}
