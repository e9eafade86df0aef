// Short links on PostgreSQL: the social preview's image (link_images), as sqlite-images.ts, written with the
// transaction handed to the link's change.
import type { SQL, TransactionSQL } from 'bun'
import { int, text } from '../../db/postgres/rows'
import type { LinkImage, LinkStorage } from './contract'

export function postgresImages(sql: SQL): Pick<LinkStorage<TransactionSQL>, 'image' | 'putImage'> {
  return {
    async image(linkId) {
      const [r] = await sql`SELECT version, type, width, height, bytes FROM link_images WHERE link_id = ${linkId}`
      if (!r) return null
      return {
        version: text(r.version),
        type: text(r.type),
        width: int(r.width),
        height: int(r.height),
        bytes: new Uint8Array(r.bytes as Uint8Array),
      } satisfies LinkImage
    },
    putImage(tx, linkId, image) {
      if (!image) return tx`DELETE FROM link_images WHERE link_id = ${linkId}`.then(() => undefined)
      const { version, type, width, height } = image
      const bytes = Buffer.from(image.bytes)
      return tx`INSERT INTO link_images (link_id, version, type, width, height, bytes)
        VALUES (${linkId}, ${version}, ${type}, ${width}, ${height}, ${bytes})
        ON CONFLICT (link_id) DO UPDATE SET version = EXCLUDED.version, type = EXCLUDED.type,
          width = EXCLUDED.width, height = EXCLUDED.height, bytes = EXCLUDED.bytes`.then(() => undefined)
    },
  }
}
