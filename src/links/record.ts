// A link as the API answers it (LinkRecord): built from its row and its tags, the same for every reader.
import { iso } from '../db/sqlite'
import type { Domains } from './domains'
import type { LinkRow, LinkStorage } from './storage/contract'
import { ogImageUrl } from './preview'
import type { Mode } from './validate'
import type { Rule, SplitArm } from './validate-routing'

export interface LinkRecord {
  hex: string
  url: string
  long_url: string
  qr: string
  stats: string
  mode: Mode
  created: string
  expires: string | null
  expired: boolean
  password: boolean
  clicks: number
  /** Null while the link works; else why an admin disabled it. */
  disabled: string | null
  /** Its tags, sorted (SPEC §2a); empty without. */
  tags: string[]
  /** The visit limit (null: none) and the visits it has left (null without a limit). */
  max_visits: number | null
  visits_left: number | null
  /** Its redirect rules and A/B split, when it has them (absent otherwise). */
  rules?: Rule[]
  split?: SplitArm[]
  /** 0-200 characters, "" for none. */
  title: string
  /** Its short domain's host (SPEC §13): base_url's for the default. */
  domain: string
  /** Where it sends people once expired or used up (null: the 410 page). */
  expired_url: string | null
  /** The social preview (SPEC §2a): "" without; og_image the image's absolute, versioned address or null. */
  og_title: string
  og_description: string
  og_image: string | null
}

export function createRecords(
  domains: Pick<Domains, 'baseOf' | 'hostOf'>,
  clock: () => number,
  store: Pick<LinkStorage<unknown>, 'tagsFor' | 'tagsOf'>,
) {
  /** A link as the API answers it, with its tags (sorted). */
  function record(row: LinkRow, tags: readonly string[]): LinkRecord {
    const now = clock()
    const base = domains.baseOf(row.domain)
    return {
      hex: row.code,
      url: `${base}/${row.code}`,
      long_url: row.long_url,
      qr: `${base}/qr/${row.code}.png`,
      stats: `${base}/${row.code}+`,
      mode: row.mode,
      created: iso(row.created)!,
      expires: iso(row.expires),
      expired: row.expires !== null && row.expires <= now,
      password: row.password_hash !== null,
      clicks: row.clicks,
      disabled: row.disabled,
      tags: [...tags],
      max_visits: row.max_visits,
      visits_left: row.max_visits === null ? null : Math.max(0, row.max_visits - row.visits_used),
      ...(row.rules ? { rules: JSON.parse(row.rules) as Rule[] } : {}),
      ...(row.split ? { split: JSON.parse(row.split) as SplitArm[] } : {}),
      title: row.title,
      domain: domains.hostOf(row.domain),
      expired_url: row.expired_url,
      og_title: row.og_title,
      og_description: row.og_description,
      og_image: ogImageUrl(base, row),
    }
  }
  return {
    record,
    /** Records of several links, their tags read in one statement. */
    async records(rows: LinkRow[]): Promise<LinkRecord[]> {
      const tags = await store.tagsFor(rows.map((r) => r.id))
      return rows.map((r) => record(r, tags.get(r.id) ?? []))
    },
    /** One link's record, its tags read. */
    recordOf: async (row: LinkRow) => record(row, await store.tagsOf(row.id)),
  }
}
export type Records = ReturnType<typeof createRecords>
