// The parameters of issue 40's UTM builder and expiry destination (create and update), declared once as schemas
// like the others (api-params.ts); `extrasOf` hands what was sent to the service.
import { Type } from '@sinclair/typebox'
import type { ApiParam } from '../web/schema'
import { named } from './api-params'
import { MAX_URL_LENGTH } from './validate'
import { MAX_UTM_LENGTH, UTM_PARAMS, type UtmParam } from './utm'

const UTM_SAYS: Record<UtmParam, [string, string]> = {
  utm_source: ['where the traffic comes from', 'newsletter'],
  utm_medium: ['the kind of channel', 'email'],
  utm_campaign: ['the campaign', 'spring-sale'],
  utm_term: ['the paid search term', 'running shoes'],
  utm_content: ['which link or version of an ad', 'header-button'],
}

export function utmParams(onCreate: boolean): ApiParam[] {
  return UTM_PARAMS.map((name) => ({
    name,
    // On create "" is nothing to set; on update it removes the parameter from the destination.
    absent: onCreate ? ['', null] : [null],
    schema: Type.String({
      maxLength: MAX_UTM_LENGTH,
      pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]*$',
      description:
        `${name} (${UTM_SAYS[name][0]}): 0 to ${MAX_UTM_LENGTH} characters, set in the destination's query ` +
        '(percent-encoded), replacing a parameter of that name where it stands and keeping the rest of the query in ' +
        `its order; not stored apart: long_url carries it. ${onCreate ? 'Not set by default' : `"" removes ${name} from the destination`}`,
      examples: [UTM_SAYS[name][1]],
    }),
    error: {
      code: 'invalid_parameter',
      messages: {
        type: `${named(name)} must be a string.`,
        maxLength: `${named(name)} is invalid: at most ${MAX_UTM_LENGTH} characters.`,
        default: `${named(name)} is invalid: no control characters.`,
      },
    },
  }))
}

export function expiredUrlParam(onCreate: boolean): ApiParam {
  return {
    name: 'expired_url',
    absent: onCreate ? ['', null] : [null],
    schema: Type.String({
      maxLength: MAX_URL_LENGTH,
      pattern: '^(|[Hh][Tt][Tt][Pp][Ss]?://.*)$',
      description:
        'Where the link sends people once it has expired or its max_visits are used up, instead of the 410 page (with the ' +
        `configured redirect status). The rules of "url" apply. ${onCreate ? 'None by default' : '"" removes it'}`,
      examples: ['https://example.com/offer-ended'],
    }),
    error: {
      code: 'invalid_url',
      messages: {
        type: `${named('expired_url')} must be a string.`,
        maxLength: `${named('expired_url')} must be at most ${MAX_URL_LENGTH} characters.`,
        default: `${named('expired_url')} must be an absolute URL with the scheme http or https.`,
      },
    },
  }
}

/** The sent values of these parameters, for the service's create and update. */
export function extrasOf(params: Record<string, unknown>) {
  return {
    expired_url: params.expired_url,
    utm_source: params.utm_source,
    utm_medium: params.utm_medium,
    utm_campaign: params.utm_campaign,
    utm_term: params.utm_term,
    utm_content: params.utm_content,
  }
}
