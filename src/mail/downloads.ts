// Signed downloads of a message's raw source and its attachments: the links message.json gives, and the bytes
// when one is followed (the signature checked before anything is looked up).
import { AppError, notFound } from '../kernel/errors'
import type { LinkSigner } from '../kernel/signing'
import { RAW_PART, type MailboxRow, type MailBytes, type MessageStore } from './storage/contract'

/** Signed links to attachments and raw sources work this long after message.json gave them. */
export const MAIL_LINK_TTL_MS = 60 * 60 * 1000

/** A signed download: its bytes and how to name them. */
export interface MailDownload {
  body: MailBytes
  filename: string
  contentType: string
  size: number
}

export function createDownloads<Tx>({
  messages,
  signer,
  clock,
  base,
  live,
}: {
  messages: MessageStore<Tx>
  signer: LinkSigner
  clock: () => number
  /** server.base_url: where the signed links point. */
  base: string
  /** Whether a mailbox is still there (not expired): the service's rule. */
  live: (row: MailboxRow | null | undefined, now: number) => row is MailboxRow
}) {
  function signedUrl(path: string, id: string, now: number) {
    return `${base}${path}?${signer.sign(id, now + MAIL_LINK_TTL_MS).query}`
  }

  /**
   * A signed download: the bytes and how to name them, or an AppError (403 tampered, 410 expired, 404 gone).
   * The signature is checked before anything is looked up, so a guessed id learns nothing.
   */
  async function download(
    kind: 'raw' | 'attachment',
    idText: string,
    exp: string | null,
    sig: string | null,
  ): Promise<MailDownload> {
    if (!/^[1-9][0-9]{0,15}$/.test(idText)) throw notFound('There is no such file.')
    const check = signer.check(`mail-${kind}-${idText}`, exp, sig, clock())
    if (check === 'tampered')
      throw new AppError(403, 'invalid_signature', 'This link is not valid: its signature does not match.')
    if (check === 'expired')
      throw new AppError(410, 'expired', 'This link has expired: ask message.json for a new one.')
    const id = Number(idText)
    const now = clock()
    if (kind === 'raw') {
      const row = await messages.message(id)
      const box = row && (await messages.mailboxById(row.mailbox_id))
      if (!row || !live(box, now)) throw notFound('This message no longer exists.')
      const body = await messages.bytes(row.blob, RAW_PART)
      if (!body) throw notFound('This file no longer exists.')
      return { body, filename: `message-${row.id}.eml`, contentType: 'message/rfc822', size: row.size }
    }
    const a = await messages.attachment(id)
    const box = a && (await messages.mailboxById(a.mailbox_id))
    if (!a || !live(box, now)) throw notFound('This attachment no longer exists.')
    const body = await messages.bytes(a.blob, a.part)
    if (!body) throw notFound('This file no longer exists.')
    return { body, filename: a.filename, contentType: a.content_type, size: a.size }
  }

  return { signedUrl, download }
}
