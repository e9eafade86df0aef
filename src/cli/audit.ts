// `linkbox audit [--since DATE] [--json]`: the audit log from --since on, oldest first, read in pages.
import { ConfigError } from '../kernel/errors'
import type { Invocation } from './args'
import { context } from './context'
import { OPTION_VALUES } from './help'

/** A --since value: a day (YYYY-MM-DD, its start in UTC) or an ISO 8601 time, as unix ms. */
function sinceOf(text: string): number {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const ms = Date.parse(`${text}T00:00:00Z`)
    if (!Number.isNaN(ms) && new Date(ms).toISOString().startsWith(text)) return ms
  } else if (/^\d{4}-\d{2}-\d{2}T/.test(text) && !Number.isNaN(Date.parse(text))) return Date.parse(text)
  throw new ConfigError(
    `--since needs ${OPTION_VALUES.since} (got ${JSON.stringify(text.slice(0, 40))}); linkbox audit --help lists the options`,
  )
}

export async function run(invocation: Invocation): Promise<number> {
  const cx = context(invocation)
  const { sub, values } = cx
  if (sub !== undefined) throw new ConfigError('usage: linkbox audit [--since DATE] [--json]')
  const json = !!values.json
  const from = values.since === undefined ? 0 : sinceOf(values.since)
  const [{ printable }, { actorText, auditJson, AUDIT_PAGE_MAX }] = await Promise.all([
    import('../accounts'),
    import('../audit'),
  ])
  const audit = await (await cx.open()).audit()
  try {
    if (!json) console.log(['time', 'actor', 'action', 'target', 'address', 'detail'].join('\t'))
    for (let after = 0; ; ) {
      const rows = await audit.since(from, after, AUDIT_PAGE_MAX)
      for (const r of rows) {
        if (json) console.log(JSON.stringify(auditJson(r)))
        else
          console.log(
            [
              new Date(r.at).toISOString(),
              printable(actorText(r)),
              r.action,
              printable(r.target),
              printable(r.address),
              printable(r.detail),
            ].join('\t'),
          )
      }
      if (rows.length === 0) break
      after = rows[rows.length - 1]!.id
    }
  } finally {
    await cx.close()
  }
  return 0
}
