// The Admin section's health page: the /healthz check and the /metrics numbers drawn for people, kept up to date
// while it is open (assets/app.js polls health.json, the same figures formatted here; without JavaScript, reload).
import { Elysia } from 'elysia'
import { VERSION } from '../kernel/version'
import { escapeHtml, timeHtml } from '../web/render'
import {
  barBlock,
  barRows,
  barsOf,
  bytes,
  count,
  databaseBytes,
  DELIVERY_LABELS,
  DELIVERY_TONES,
  duration,
  MEDIA_TONES,
  reader,
  stats,
  VISIT_LABELS,
  VISIT_TONES,
  type Bar,
  type Bars,
  type Stat,
} from './admin-figures'
import { HEALTH, tabs } from './admin-tabs'
import type { DashboardDeps } from './deps'
import type { Session } from './sessions'
import { when } from './page-helpers'

export function createHealthSection(deps: DashboardDeps) {
  const { shell, metrics, config, clock, databaseProblem } = deps

  /** Every figure of the health page, formatted, by card: what the page shows and health.json answers. */
  function healthModel() {
    const m = reader(metrics.snapshot())
    const n = (name: string) => m.value(name)
    const num = (name: string) => {
      const v = n(name)
      return v === null ? '—' : count(v)
    }
    const problem = databaseProblem()
    const dbBytes = databaseBytes(config.data_dir)
    const uptime = n('process_uptime_seconds')
    const rss = n('process_resident_memory_bytes')
    const since = uptime === null ? 'since start' : `in ${duration(uptime)}`
    const dropped = n('linkbox_clicks_dropped_total') ?? 0
    const buffer = n('linkbox_click_buffer') ?? 0
    const classes = m.by('linkbox_api_requests_total', 'status', (v) => (/^[1-5]\d\d$/.test(v) ? `${v[0]}xx` : 'other'))
    const apiBars: Bar[] = ['2xx', '3xx', '4xx', '5xx', 'other']
      .filter((c) => classes.has(c) || c === '2xx' || c === '4xx' || c === '5xx')
      .map((c) => ({
        label: c,
        value: classes.get(c) ?? 0,
        tone: c === '5xx' ? 'danger' : c === '4xx' ? 'warn' : undefined,
      }))
    const apiTotal = [...classes.values()].reduce((a, b) => a + b, 0)
    const oldest = n('linkbox_webhook_oldest_pending_seconds') ?? 0
    const cards = {
      status: [
        { key: 'version', label: 'Version', value: VERSION },
        { key: 'uptime', label: 'Uptime', value: uptime === null ? '—' : duration(uptime) },
        { key: 'memory', label: 'Memory', value: rss === null ? '—' : bytes(rss), note: 'resident' },
        {
          key: 'database',
          label: 'Database',
          value: dbBytes === null ? '—' : bytes(dbBytes),
          note: 'file and write-ahead log',
        },
      ],
      links: [
        {
          key: 'links',
          label: 'Links',
          value: num('linkbox_links'),
          note: `${num('linkbox_links_created_total')} created ${since}`,
        },
        { key: 'clicks', label: 'Clicks written', value: num('linkbox_clicks_written_total'), note: since },
        {
          key: 'click-buffer',
          label: 'Click buffer',
          value: num('linkbox_click_buffer'),
          note: 'waiting for the next write',
          tone: buffer > 1000 ? 'warn' : undefined,
        },
        {
          key: 'clicks-dropped',
          label: 'Dropped clicks',
          value: num('linkbox_clicks_dropped_total'),
          note: dropped > 0 ? 'writes kept failing' : 'none lost',
          tone: dropped > 0 ? 'danger' : undefined,
        },
        { key: 'qr-waiting', label: 'QR waiting', value: num('linkbox_qr_waiting'), note: 'renderings queued' },
      ],
      api: [
        { key: 'api-answers', label: 'Answers', value: count(apiTotal), note: since },
        {
          key: 'api-5xx',
          label: 'Server errors',
          value: count(classes.get('5xx') ?? 0),
          note: '5xx answers',
          tone: (classes.get('5xx') ?? 0) > 0 ? 'danger' : undefined,
        },
      ],
      mail: [
        { key: 'mailboxes', label: 'Mailboxes', value: num('linkbox_mailboxes') },
        {
          key: 'messages',
          label: 'Messages',
          value: num('linkbox_mail_messages'),
          note: `${num('linkbox_mail_received_total')} received ${since}`,
        },
        {
          key: 'mail-bytes',
          label: 'Stored',
          value: n('linkbox_mail_bytes') === null ? '—' : bytes(n('linkbox_mail_bytes')!),
          note: 'as received',
        },
        { key: 'smtp', label: 'SMTP connections', value: num('linkbox_smtp_connections'), note: 'open now' },
        {
          key: 'mail-waiting',
          label: 'Waiting requests',
          value: num('linkbox_mail_waiting'),
          note: 'messages.json held open',
        },
      ],
      media: [
        { key: 'media-queue', label: 'Queue', value: num('linkbox_media_queue'), note: 'yt-dlp runs waiting' },
        { key: 'media-running', label: 'Running', value: num('linkbox_media_running'), note: 'yt-dlp runs' },
        {
          key: 'media-served',
          label: 'Served',
          value: n('linkbox_media_bytes_served_total') === null ? '—' : bytes(n('linkbox_media_bytes_served_total')!),
          note: since,
        },
      ],
      hooks: [
        { key: 'outbox', label: 'Outbox', value: num('linkbox_webhook_outbox'), note: 'deliveries to send or retry' },
        {
          key: 'oldest-pending',
          label: 'Oldest pending',
          value: oldest > 0 ? duration(oldest) : 'none',
          note: 'age of the oldest event waiting',
          tone: oldest > 3600 ? 'warn' : undefined,
        },
      ],
    } satisfies Record<string, Stat[]>
    const bars = {
      visits: {
        key: 'visits',
        caption: `Visits by outcome, ${since}`,
        head: 'Outcome',
        bars: barsOf(m.by('linkbox_visits_total', 'outcome'), VISIT_LABELS, VISIT_TONES),
      },
      api: { key: 'api', caption: 'Answers by status class', head: 'Status class', bars: apiBars },
      media: {
        key: 'media',
        caption: `Extractions by outcome, ${since}`,
        head: 'Outcome',
        bars: barsOf(m.by('linkbox_media_extractions_total', 'outcome'), {}, MEDIA_TONES),
      },
      hooks: {
        key: 'hooks',
        caption: `Delivery attempts by outcome, ${since}`,
        head: 'Outcome',
        bars: barsOf(m.by('linkbox_webhook_deliveries_total', 'outcome'), DELIVERY_LABELS, DELIVERY_TONES),
      },
    } satisfies Record<string, Bars>
    const at = clock()
    return { problem, read: when(at), readAt: at, cards, bars }
  }

  /** health.json: the figures as the page words them, for app.js to put in place (data-stat, data-bars). */
  function healthJson() {
    const model = healthModel()
    return {
      problem: model.problem,
      read: model.read,
      /** The same instant for a <time datetime> (assets/app-times.js shows it in the viewer's zone). */
      read_at: new Date(model.readAt).toISOString(),
      stats: Object.values(model.cards)
        .flat()
        .map((x: Stat) => ({ key: x.key, value: x.value, note: x.note ?? '', tone: x.tone ?? null })),
      bars: Object.values(model.bars).map((b) => ({
        key: b.key,
        caption: b.caption,
        head: b.head,
        rows: barRows(b.bars),
      })),
    }
  }

  function healthPage(request: Request, s: Session) {
    const { problem, readAt, cards, bars } = healthModel()
    const status =
      problem === null
        ? `<section class="card health-status ok" aria-labelledby="status-h" data-health-status><h2 id="status-h"><span class="dot" aria-hidden="true"></span>Working</h2><p>The database can be written: <code>/readyz</code> answers <code>ok</code>.</p>`
        : `<section class="card health-status degraded" aria-labelledby="status-h" data-health-status><h2 id="status-h"><span class="dot" aria-hidden="true"></span>Degraded</h2><p>The database cannot be written: ${escapeHtml(problem)}. Visits and reads still work; <code>/readyz</code> answers 503, <code>/healthz</code> 200 naming the database's state.</p>`
    const statusCard = `${status}
${stats(cards.status)}
</section>`
    const links = `<section class="card" aria-labelledby="links-h"><h2 id="links-h">Links and clicks</h2>
${stats(cards.links)}
${barBlock(bars.visits)}
</section>`
    const api = `<section class="card" aria-labelledby="api-h"><h2 id="api-h">API</h2>
${stats(cards.api)}
${barBlock(bars.api)}
</section>`
    const mail = `<section class="card" aria-labelledby="mail-h"><h2 id="mail-h">Mail</h2>
${stats(cards.mail)}
</section>`
    const media = `<section class="card" aria-labelledby="media-h"><h2 id="media-h">Media</h2>
${stats(cards.media)}
${barBlock(bars.media)}
</section>`
    const hooks = `<section class="card" aria-labelledby="hooks-h"><h2 id="hooks-h">Webhooks</h2>
${stats(cards.hooks)}
${barBlock(bars.hooks)}
</section>`

    const content = `<h1>Admin</h1>
${tabs('health')}
<p class="muted health-read" id="health-read" data-live-health="${HEALTH}.json">Read <span id="health-read-at">${timeHtml(readAt)}</span><span id="health-read-how">; reload for new numbers</span>. The same values, for a monitor, are at <a href="/metrics">/metrics</a> and <a href="/healthz">/healthz</a>.</p>
${statusCard}
<div class="health-grid">
${links}
${api}
${mail}
${media}
${hooks}
</div>`
    return shell.render(request, s, { section: 'admin', title: 'Admin · Health', content })
  }

  return (
    new Elysia({ name: 'dashboard-admin-health' })
      // The live page's figures: for a signed-in administrator only, as JSON (a 401 or 403 too, never a page).
      .get(`${HEALTH}.json`, async ({ request }) => {
        const json = (status: number, body: unknown) =>
          new Response(JSON.stringify(body), {
            status,
            headers: {
              'content-type': 'application/json; charset=utf-8',
              'cache-control': 'no-store',
              'x-content-type-options': 'nosniff',
            },
          })
        const s = await shell.session(request)
        if (!s) return json(401, { error: 'signed_out', message: 'Sign in again to see the figures.' })
        if (!s.admin) return json(403, { error: 'not_admin', message: 'This page is for administrator accounts.' })
        return metrics.refresh().then(() => json(200, healthJson()))
      })
      .get(HEALTH, async ({ request }) => {
        const s = await shell.requireAdmin(request)
        if (s instanceof Response) return s
        return metrics.refresh().then(() => healthPage(request, s))
      })
  )
}
