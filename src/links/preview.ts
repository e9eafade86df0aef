// A link's social preview (SPEC §2a): og_title, og_description and og_image checked and turned into the row's
// fields and the image to store in the same transaction; the image's public address; what a crawler is shown.
import type { LinkImage, LinkRow } from './storage/contract'
import { extensionOf, readOgUpload } from './og-image'
import type { OgImagePool } from './og-image-pool'
import { TITLE_CONTROLS } from './validate'
import { invalidParameter } from '../kernel/errors'

export const MAX_OG_TITLE_LENGTH = 200
export const MAX_OG_DESCRIPTION_LENGTH = 500
/** The first path segment preview images are served under (a reserved name: no code can be it). */
export const OG_PATH = '_og'

export interface PreviewInput {
  og_title?: unknown
  og_description?: unknown
  /** A file; '' (update) removes the image. */
  og_image?: unknown
}

export interface PreviewChanges {
  fields: { og_title?: string; og_description?: string; og_image?: string | null }
  /** The image to write with the link (null: remove it); undefined: left as it is. */
  image?: LinkImage | null
}

const present = (v: unknown) => v !== undefined && v !== null

/** Text of at most `max` characters (code points), no control characters but line breaks and tabs. */
function previewText(value: unknown, name: string, max: number): string {
  if (typeof value !== 'string') throw invalidParameter(name, 'it must be a string')
  if (TITLE_CONTROLS.test(value)) throw invalidParameter(name, 'it must not contain control characters')
  if (value.length > max && [...value].length > max) throw invalidParameter(name, `at most ${max} characters`)
  return value
}

/** The preview fields sent, checked; an uploaded image re-encoded off the main thread (og-image-pool.ts). */
export async function previewChanges(input: PreviewInput, pool: () => OgImagePool): Promise<PreviewChanges> {
  const out: PreviewChanges = { fields: {} }
  if (present(input.og_title)) out.fields.og_title = previewText(input.og_title, 'og_title', MAX_OG_TITLE_LENGTH)
  if (present(input.og_description))
    out.fields.og_description = previewText(input.og_description, 'og_description', MAX_OG_DESCRIPTION_LENGTH)
  if (input.og_image === '') {
    out.fields.og_image = null
    out.image = null
  } else if (present(input.og_image)) {
    const image = await pool().reencode(await readOgUpload(input.og_image))
    // The version names the file: its content hash and extension (a new image is a new address).
    const version = `${image.version}.${extensionOf(image.type)}`
    out.image = { ...image, version }
    out.fields.og_image = version
  }
  return out
}

/** Whether the link has a social preview (a crawler then gets its card: visit.ts). */
export const hasPreview = (row: Pick<LinkRow, 'og_title' | 'og_description' | 'og_image'>) =>
  row.og_title !== '' || row.og_description !== '' || row.og_image !== null

/** The image's public address on the short domain, versioned (or null without one). */
export const ogImageUrl = (base: string, row: Pick<LinkRow, 'code' | 'og_image'>) =>
  row.og_image === null ? null : `${base}/${OG_PATH}/${row.code}/${row.og_image}`
