// The parameters of a link's own fields (create and update), each declared once as a schema: the /api pipeline
// checks requests against it and the API documents are made from it (web/schema.ts).
import { Type } from '@sinclair/typebox'
import type { ApiParam } from '../web/schema'
import {
  MAX_EXPIRE,
  MAX_PASSWORD_LENGTH,
  MAX_TAG_LENGTH,
  MAX_TAGS,
  MAX_TITLE_LENGTH,
  MAX_URL_LENGTH,
  MODES,
} from './validate'
import {
  CONDITIONS,
  DEVICES,
  MAX_CONDITION_VALUES,
  MAX_JSON_CHARS,
  MAX_RULES,
  MAX_SPLIT,
  MAX_VISITS,
  MAX_WEIGHT,
  MIN_SPLIT,
} from './validate-routing'

export const named = (name: string) => `The parameter "${name}"`
export const CODE_PATTERN = '^[A-Za-z0-9_-]+$'
export const EXAMPLE_BASE = 'https://sho.rt'

export function urlParam(onCreate: boolean): ApiParam {
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

export const aliasParam: ApiParam = {
  name: 'alias',
  absent: ['', null],
  schema: Type.String({
    minLength: 2,
    maxLength: 32,
    pattern: CODE_PATTERN,
    description:
      'Custom short code instead of a generated one (case-sensitive); reserved words such as "api" are refused (409)',
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

export function modeParam(onCreate: boolean): ApiParam {
  return {
    name: 'mode',
    absent: onCreate ? ['', null] : [],
    schema: Type.String({
      enum: [...MODES],
      ...(onCreate ? { default: 'redirect' } : {}),
      description:
        'redirect: straight to the destination; preview: a page showing it first; frame: it under a slim bar',
      examples: ['preview'],
    }),
    error: {
      code: 'invalid_mode',
      messages: {
        type: `${named('mode')} must be a string.`,
        default: `${named('mode')} must be one of: ${MODES.join(', ')}.`,
      },
    },
  }
}

export function expireParam(onCreate: boolean): ApiParam {
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

export function passwordParam(onCreate: boolean): ApiParam {
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
export function tagsParam(onCreate: boolean): ApiParam {
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

export function titleParam(onCreate: boolean): ApiParam {
  return {
    name: 'title',
    absent: onCreate ? ['', null] : [null],
    schema: Type.String({
      maxLength: MAX_TITLE_LENGTH,
      pattern: '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$',
      description: `Title: 0 to ${MAX_TITLE_LENGTH} characters, no control characters but line breaks and tabs; ${onCreate ? "none by default: with a key, the destination page's title is fetched once after the creation (links.fetch_metadata)" : '"" removes it'}. links.json's q= searches it`,
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
export function maxVisitsParam(onCreate: boolean): ApiParam {
  const integer = { minimum: 0, maximum: MAX_VISITS }
  const description =
    `Visit limit: after this many visits by people (bots and link previews use none) the link answers 410; ` +
    (onCreate
      ? '0 = no limit'
      : 'changing it keeps the visits already used (raising it opens the link again); 0 or "" removes the limit and its count')
  return {
    name: 'max_visits',
    absent: onCreate ? ['', null] : [null],
    // On update "" removes the limit, as password="" removes a password: a form's blank field means none.
    schema: onCreate
      ? Type.Integer({ ...integer, default: 0, description, examples: [100] })
      : Type.Union([Type.Integer(integer), Type.String({ pattern: '^[0-9]{0,10}$' })], {
          description,
          examples: [100],
        }),
    error: { code: 'invalid_parameter', messages: { default: `${named('max_visits')} must be ${VISITS_RULE}.` } },
  }
}

/** A JSON array as text ("" too, which on update removes); what is in it the service checks, naming the place. */
const JSON_ARRAY = '^(\\[[\\s\\S]*\\])?$'
const RULES_EXAMPLE =
  '[{"country":["DE","AT","CH"],"url":"https://example.com/de"},{"device":["mobile"],"url":"https://m.example.com/"}]'
export function rulesParam(onCreate: boolean): ApiParam {
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
      messages: {
        type: `${named('rules')} must be a string: a JSON array of rules.`,
        default: `${named('rules')} is invalid: a JSON array of rules, at most ${MAX_JSON_CHARS} characters.`,
      },
    },
  }
}

const SPLIT_EXAMPLE = '[{"url":"https://example.com/a","weight":50},{"url":"https://example.com/b","weight":50}]'
export function splitParam(onCreate: boolean): ApiParam {
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
      messages: {
        type: `${named('split')} must be a string: a JSON array of destinations.`,
        default: `${named('split')} is invalid: a JSON array of destinations, at most ${MAX_JSON_CHARS} characters.`,
      },
    },
  }
}
