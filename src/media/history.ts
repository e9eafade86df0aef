// The downloads an account started from the dashboard's Download page (SPEC §11: in the database, the same on
// every node): recorded when the account follows a format's link there, listed newest first with the link while
// it is valid. The list outlives the tickets (swept once expired), so it keeps what it shows.
import type { Caller } from '../kernel/caller'
import { notFound } from '../kernel/errors'
import type { LinkSigner } from '../kernel/signing'
import type { TicketRow, TicketStorage } from './storage/contract'

/** One of the account's downloads, as the Download page lists it. */
export interface StartedDownload {
  ticketId: number
  /** The file's name (the page's title and the format's extension). */
  filename: string
  formatId: string
  pageUrl: string
  started: number
  linkExpires: number
  /** The signed /dl link's path and query while it is valid, else null. */
  link: string | null
}

export interface HistoryDeps {
  tickets: TicketStorage
  signer: LinkSigner
  clock: () => number
  /** The ticket behind a signed link, or the AppError of /dl (403 tampered, 410 expired, 404 unknown). */
  ticket: (idText: string, exp: string | null, sig: string | null) => Promise<TicketRow>
}

export function createHistory({ tickets, signer, clock, ticket }: HistoryDeps) {
  const query = (id: number, expires: number) => signer.sign(`dl-${id}`, expires).query
  return {
    /**
     * Records that the caller starts the download behind a signed link of one of its own tickets (another
     * account's is a 404, as an unknown one); its /dl link and progress stream, as paths of this service.
     */
    async start(caller: Caller, idText: string, exp: string | null, sig: string | null) {
      const row = await ticket(idText, exp, sig)
      if (row.account_id !== caller.accountId) throw notFound('There is no such download.')
      const linkExpires = Number(exp) * 1000
      await tickets.started({
        account_id: caller.accountId,
        ticket_id: row.id,
        page_url: row.page_url,
        filename: row.filename,
        format_id: row.format_id,
        created: clock(),
        link_expires: linkExpires,
      })
      const q = query(row.id, linkExpires)
      return { file: `/dl/${row.id}?${q}`, progress: `/dl/${row.id}/progress?${q}` }
    },

    /** The caller's newest downloads (at most DOWNLOADS_KEPT), each with its link while that is valid. */
    async recent(caller: Caller): Promise<StartedDownload[]> {
      const now = clock()
      return (await tickets.downloads(caller.accountId)).map((d) => ({
        ticketId: d.ticket_id,
        filename: d.filename,
        formatId: d.format_id,
        pageUrl: d.page_url,
        started: d.created,
        linkExpires: d.link_expires,
        link: d.link_expires > now ? `/dl/${d.ticket_id}?${query(d.ticket_id, d.link_expires)}` : null,
      }))
    },
  }
}
export type MediaHistory = ReturnType<typeof createHistory>
