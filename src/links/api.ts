// The five link methods of the user's document: HTTP parameters in, service call, record out.
import type { ApiMethod } from '../http/api'
import type { LinkService } from './service'

const linkFields = [
  { name: 'url', type: 'string', description: 'Destination URL, http or https, at most 4096 characters' },
  { name: 'mode', type: 'string', description: 'redirect (default), preview or frame' },
  { name: 'expire', type: 'integer', description: 'Lifetime in seconds; 0 = no expiry; at most 10 years' },
  { name: 'password', type: 'string', description: 'Password visitors must enter (1-128 characters); "" removes it on update' },
] as const

export function linkApi(links: LinkService): ApiMethod[] {
  return [
    {
      verb: 'POST',
      path: '/api/getLink.json',
      key: 'optional',
      scope: 'links',
      summary: 'Create a short link (anonymous without a key; owned by the key\'s account with one)',
      params: [
        { ...linkFields[0], required: true },
        { name: 'alias', type: 'string', description: 'Custom short code: 2-32 letters, digits, _ and -' },
        ...linkFields.slice(1),
      ],
      handler: ({ params: p, caller }) =>
        links.create({ url: p.url, alias: p.alias, mode: p.mode, expire: p.expire, password: p.password }, caller),
    },
    {
      verb: 'POST',
      path: '/api/stats.json',
      key: 'optional',
      summary: 'Statistics of a link: clicks by day, sources, devices, browsers and operating systems',
      params: [
        { name: 'code', required: true, type: 'string', description: 'Short code of the link' },
        { name: 'from', type: 'string', description: 'First day, YYYY-MM-DD (UTC); default 29 days before "to"' },
        { name: 'to', type: 'string', description: 'Last day, YYYY-MM-DD (UTC); default today; at most 366 days in all' },
      ],
      handler: ({ params, caller }) => links.stats({ code: params.code, from: params.from, to: params.to }, caller),
    },
    {
      verb: 'POST',
      path: '/api/links.json',
      key: 'required',
      scope: 'links',
      summary: "List the caller's links, newest first",
      params: [
        { name: 'limit', type: 'integer', description: 'Links per page, 1-500 (default 100)' },
        { name: 'cursor', type: 'string', description: 'The "next" value of the previous page' },
      ],
      handler: ({ params, caller }) => links.list({ limit: params.limit, cursor: params.cursor }, caller!),
    },
    {
      verb: 'POST',
      path: '/api/update.json',
      key: 'required',
      scope: 'links',
      summary: 'Change a link: only the fields sent are changed',
      params: [{ name: 'code', required: true, type: 'string', description: 'Short code of the link' }, ...linkFields],
      handler: ({ params, caller }) =>
        links.update(
          { code: params.code, url: params.url, mode: params.mode, expire: params.expire, password: params.password },
          caller!,
        ),
    },
    {
      verb: 'POST',
      path: '/api/delete.json',
      key: 'required',
      scope: 'links',
      summary: 'Delete a link and its statistics; the code becomes free again',
      params: [{ name: 'code', required: true, type: 'string', description: 'Short code of the link' }],
      handler: ({ params, caller }) => links.delete({ code: params.code }, caller!),
    },
  ]
}
