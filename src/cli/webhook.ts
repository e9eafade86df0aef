// `linkbox webhook …`: the same service as POST /api/webhooks.json, for any account, as the actor "cli".
import { ConfigError } from '../kernel/errors'
import type { Invocation } from './args'
import { context } from './context'

export async function run(invocation: Invocation): Promise<number> {
  const cx = context(invocation)
  const { sub, arg, arg2 } = cx
  const events = cx.values.events
  const usage =
    'usage: linkbox webhook create ACCOUNT URL [--events a,b] | webhook list [ACCOUNT] | webhook log ID | webhook delete ID | webhook test ID'
  const idOf = (text: string | undefined) => {
    if (!text || !/^[1-9][0-9]{0,14}$/.test(text)) throw new ConfigError(usage)
    return Number(text)
  }
  const [{ printable }, { CLI }] = await Promise.all([import('../accounts'), import('../audit')])
  const webhooks = await (await cx.open()).webhooks()
  try {
    if (sub === 'create' && arg && arg2) {
      const made = await webhooks.createFor(await webhooks.accountId(arg), { url: arg2, events }, {}, CLI)
      console.log(`webhook ${made.id} for ${arg}: ${made.url} (${made.events}); its signing secret (shown once):`)
      console.log(made.secret)
    } else if (sub === 'list' && !arg2) {
      const rows = arg
        ? (await webhooks.listFor(await webhooks.accountId(arg))).webhooks.map((w) => ({ ...w, account: arg }))
        : await Promise.all(
            (await webhooks.listAll()).map(async (r) => ({
              id: r.id,
              url: r.url,
              events: r.events,
              enabled: r.enabled === 1,
              failing: r.failing === 1,
              disabled_reason: r.disabled_reason,
              account: r.account_name,
              deliveries: (await webhooks.listFor(r.account_id)).webhooks.find((w) => w.id === r.id)?.deliveries,
            })),
          )
      console.log(['id', 'account', 'state', 'ok', 'failed', 'pending', 'events', 'url'].join('\t'))
      for (const w of rows) {
        const state = !w.enabled
          ? `disabled (${printable(w.disabled_reason ?? '')})`
          : w.failing
            ? 'failing'
            : 'enabled'
        const d = w.deliveries ?? { ok: 0, failed: 0, pending: 0 }
        console.log(
          [w.id, printable(w.account), state, d.ok, d.failed, d.pending, w.events, printable(w.url)].join('\t'),
        )
      }
    } else if (sub === 'log' && arg && !arg2) {
      // Read first: an unknown endpoint is its error alone on stderr, with no table header before it.
      const deliveries = (await webhooks.deliveriesById(idOf(arg), 200)).deliveries
      console.log(
        ['webhook-id', 'type', 'state', 'attempts', 'status', 'ms', 'last attempt', 'next', 'error'].join('\t'),
      )
      for (const d of deliveries)
        console.log(
          [
            d.webhook_id,
            d.type,
            d.state,
            d.attempts,
            d.last_status ?? '-',
            d.last_ms ?? '-',
            d.last_at ?? '-',
            d.state === 'pending' ? d.next_at : '-',
            printable(d.last_error ?? ''),
          ].join('\t'),
        )
    } else if (sub === 'delete' && arg && !arg2) {
      await webhooks.deleteById(idOf(arg), CLI)
      console.log(`webhook ${arg} deleted`)
    } else if (sub === 'test' && arg && !arg2) {
      const t = await webhooks.test(idOf(arg))
      console.log(
        `webhook.test queued for webhook ${arg}; the running service delivers it (linkbox webhook log ${arg} shows the outcome)${t.enabled ? '' : '; note: this endpoint is disabled'}`,
      )
      console.log(t.webhook_id)
    } else throw new ConfigError(usage)
  } finally {
    await cx.close()
  }
  return 0
}
