// Abuse handling's rows on PostgreSQL, for any number of nodes sharing one database (concurrency: design notes, abuse).
import type { SQL, TransactionSQL } from 'bun'
import { CHANNEL, encodeChanges } from '../../db/postgres/changes'
import {
  BAN_TOPIC,
  type AbuseRows,
  type BanRow,
  type LinkListShow,
  type LinkListSort,
  type LinkRef,
  type ListedLink,
  type OpenReport,
  type ReportRow,
  searchPattern,
} from './contract'

/** The advisory lock key under which reports are filed: "lbreport" in ASCII. */
export const REPORTS_LOCK_KEY = 0x6c627265706f7274n

/** bigint columns come back from Bun.SQL as text; every number here stays far below 2^53. */
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))

const report = (r: Record<string, unknown>): ReportRow => ({
  id: Number(r.id),
  link_id: num(r.link_id),
  code: r.code as string,
  reason: r.reason as ReportRow['reason'],
  text: r.text as string,
  contact: r.contact as string,
  created: Number(r.created),
  closed: num(r.closed),
  action: (r.action ?? null) as ReportRow['action'],
  closed_by: num(r.closed_by),
})

const openReport = (r: Record<string, unknown>): OpenReport => ({
  ...report(r),
  long_url: (r.long_url ?? null) as string | null,
  clicks: num(r.clicks),
  owner: (r.owner ?? null) as string | null,
  link_disabled: (r.link_disabled ?? null) as string | null,
})

const linkRef = (r: Record<string, unknown>): LinkRef => ({
  id: Number(r.id),
  code: r.code as string,
  domain: r.domain as string,
})

/** Thrown inside a transaction to roll it back: the link to disable is gone. */
const NO_LINK = new Error('no_link')

/** In a ban's transaction: every node reads the bans again once it commits (the origin is no node's, so the writer hears it too). */
const bansChanged = (tx: SQL, host: string) =>
  tx`SELECT pg_notify(${CHANNEL}, ${encodeChanges('db', BAN_TOPIC, [host])[0]!})`

const ban = (r: Record<string, unknown>): BanRow => ({
  host: r.host as string,
  reason: r.reason as string,
  created: Number(r.created),
  created_by: num(r.created_by),
})

const listed = (r: Record<string, unknown>): ListedLink => ({
  id: Number(r.id),
  code: r.code as string,
  long_url: r.long_url as string,
  created: Number(r.created),
  clicks: Number(r.clicks),
  owner: (r.owner ?? null) as string | null,
  disabled: (r.disabled ?? null) as string | null,
  reports: Number(r.reports),
})

export function postgresAbuseRows(sql: SQL): AbuseRows<TransactionSQL> {
  // The admin's list of every link: sqlite.ts's fragments, with ILIKE for LIKE and byte order ("C") for text.
  const order: Record<LinkListSort, SQL.Query<unknown>> = {
    newest: sql`l.id DESC`,
    oldest: sql`l.id ASC`,
    clicks: sql`l.clicks DESC, l.id DESC`,
    code: sql`l.code COLLATE "C" ASC, l.id ASC`,
    owner: sql`a.name IS NULL, a.name COLLATE "C" ASC, l.id DESC`,
  }
  const show: Record<LinkListShow, SQL.Query<unknown>> = {
    all: sql`TRUE`,
    anonymous: sql`l.account_id IS NULL`,
    disabled: sql`l.disabled IS NOT NULL`,
    reported: sql`EXISTS (SELECT 1 FROM link_reports r WHERE r.link_id = l.id AND r.closed IS NULL)`,
  }
  const matching = (pattern: string, what: LinkListShow) => sql`
    FROM links l LEFT JOIN accounts a ON a.id = l.account_id
    WHERE (${pattern} = '' OR l.code ILIKE ${pattern} ESCAPE '\\' OR l.long_url ILIKE ${pattern} ESCAPE '\\' OR a.name ILIKE ${pattern} ESCAPE '\\')
      AND ${show[what]}`

  return {
    async listLinks(q) {
      const pattern = searchPattern(q.search)
      const [n] = await sql`SELECT count(*) AS n ${matching(pattern, q.show)}`
      const rows = await sql`
        SELECT l.id, l.code, l.long_url, l.created, l.clicks, a.name AS owner, l.disabled,
          (SELECT count(*) FROM link_reports r WHERE r.link_id = l.id AND r.closed IS NULL) AS reports
        ${matching(pattern, q.show)} ORDER BY ${order[q.sort]} LIMIT ${q.limit} OFFSET ${q.offset}`
      return { total: Number(n.n), links: rows.map(listed) }
    },

    async setLinkDisabledIf(id, reason, at, within) {
      return sql.begin(async (tx) => {
        const [row] =
          reason === null
            ? await tx`UPDATE links SET disabled = NULL, updated = ${at} WHERE id = ${id} AND disabled IS NOT NULL RETURNING id, code, domain`
            : await tx`UPDATE links SET disabled = ${reason}, updated = ${at} WHERE id = ${id} AND disabled IS NULL RETURNING id, code, domain`
        if (!row) return null
        const link = linkRef(row)
        if (within) await within(tx, link)
        return link
      })
    },

    async fileReport(r, bounds, within) {
      return sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${REPORTS_LOCK_KEY.toString()}::bigint)`
        const [n] =
          await tx`SELECT count(*) AS open, count(*) FILTER (WHERE link_id = ${r.linkId}) AS of_link FROM link_reports WHERE closed IS NULL`
        if (Number(n.open) >= bounds.maxOpen) return 'full' as const
        if (Number(n.of_link) >= bounds.maxPerLink) return 'link_full' as const
        // The link kept until the commit (a deletion waits), or found gone.
        if ((await tx`SELECT 1 FROM links WHERE id = ${r.linkId} FOR KEY SHARE`).length === 0) return 'no_link' as const
        const [row] = await tx`INSERT INTO link_reports (link_id, code, reason, text, contact, created)
                               VALUES (${r.linkId}, ${r.code}, ${r.reason}, ${r.text}, ${r.contact}, ${r.created}) RETURNING *`
        const made = report(row)
        if (within) await within(tx, made)
        return made
      })
    },

    async openReports(limit) {
      const rows = await sql`
        SELECT r.*, l.long_url, l.clicks, a.name AS owner, l.disabled AS link_disabled
          FROM link_reports r LEFT JOIN links l ON l.id = r.link_id LEFT JOIN accounts a ON a.id = l.account_id
         WHERE r.closed IS NULL ORDER BY r.id DESC LIMIT ${limit}`
      return rows.map(openReport)
    },

    async openCount() {
      return Number((await sql`SELECT count(*) AS n FROM link_reports WHERE closed IS NULL`)[0].n)
    },

    async openReport(id) {
      const [row] = await sql`
        SELECT r.*, l.long_url, l.clicks, a.name AS owner, l.disabled AS link_disabled
          FROM link_reports r LEFT JOIN links l ON l.id = r.link_id LEFT JOIN accounts a ON a.id = l.account_id
         WHERE r.id = ${id} AND r.closed IS NULL`
      return row ? openReport(row) : null
    },

    async report(id) {
      const [row] = await sql`SELECT * FROM link_reports WHERE id = ${id}`
      return row ? report(row) : null
    },

    async closeReport(id, c, within) {
      try {
        return await sql.begin(async (tx) => {
          const [row] = await tx`UPDATE link_reports SET closed = ${c.at}, action = ${c.action}, closed_by = ${c.by}
                                  WHERE id = ${id} AND closed IS NULL RETURNING *`
          if (!row)
            return (await tx`SELECT 1 FROM link_reports WHERE id = ${id}`).length > 0
              ? ('already_closed' as const)
              : ('missing' as const)
          const closed = report(row)
          let link: LinkRef | null = null
          if (c.disableLink) {
            const [l] = await tx`UPDATE links SET disabled = ${c.disableLink.reason}, updated = ${c.at}
                       WHERE id = ${closed.link_id} AND code = ${c.disableLink.code} RETURNING id, code, domain`
            if (!l) throw NO_LINK
            link = linkRef(l)
          }
          let banned: BanRow | null = null
          if (c.ban) {
            const [b] =
              await tx`INSERT INTO banned_hosts (host, reason, created, created_by) VALUES (${c.ban.host}, ${c.ban.reason}, ${c.at}, ${c.by})
                                 ON CONFLICT (host) DO NOTHING RETURNING *`
            banned = b ? ban(b) : null
            if (banned) await bansChanged(tx, banned.host)
          }
          if (within) await within(tx, closed, { link, ban: banned })
          return closed
        })
      } catch (err) {
        if (err === NO_LINK) return 'no_link' as const
        throw err
      }
    },

    async bans() {
      return (await sql`SELECT * FROM banned_hosts ORDER BY host`).map(ban)
    },

    async addBan(b, within) {
      return sql.begin(async (tx) => {
        const [row] =
          await tx`INSERT INTO banned_hosts (host, reason, created, created_by) VALUES (${b.host}, ${b.reason}, ${b.at}, ${b.by})
                               ON CONFLICT (host) DO NOTHING RETURNING *`
        if (!row) return null
        const made = ban(row)
        await bansChanged(tx, made.host)
        if (within) await within(tx, made)
        return made
      })
    },

    async removeBan(host, within) {
      return sql.begin(async (tx) => {
        const removed = (await tx`DELETE FROM banned_hosts WHERE host = ${host} RETURNING host`).length > 0
        if (removed) await bansChanged(tx, host)
        if (removed && within) await within(tx)
        return removed
      })
    },

    async setLinkDisabled(code, reason, at, within, domain = '') {
      return sql.begin(async (tx) => {
        const [row] =
          await tx`UPDATE links SET disabled = ${reason}, updated = ${at} WHERE code = ${code} AND domain = ${domain} RETURNING id, code, domain`
        if (!row) return null
        const link = linkRef(row)
        if (within) await within(tx, link)
        return link
      })
    },

    async disabledAccounts() {
      return (await sql`SELECT id FROM accounts WHERE disabled IS NOT NULL ORDER BY id`).map((r: { id: string }) =>
        Number(r.id),
      )
    },

    async destinations(after, limit) {
      const rows = await sql`SELECT id, long_url FROM links WHERE id > ${after} ORDER BY id LIMIT ${limit}`
      return rows.map((r: { id: string; long_url: string }) => ({ id: Number(r.id), long_url: r.long_url }))
    },
  }
}
