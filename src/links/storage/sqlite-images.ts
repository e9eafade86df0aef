// Short links on SQLite: the social preview's image (link_images, migration 26), written in the transaction of
// the link's change that sets it.
import type { Db } from '../../db/sqlite'
import type { LinkImage, LinkStorage } from './contract'

export function sqliteImages(db: Db): Pick<LinkStorage<Db>, 'image' | 'putImage'> {
  const read = db.query<LinkImage, [number]>(
    'SELECT version, type, width, height, bytes FROM link_images WHERE link_id = ?',
  )
  const put = db.query<unknown, [number, string, string, number, number, Uint8Array]>(
    `INSERT INTO link_images (link_id, version, type, width, height, bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
     ON CONFLICT (link_id) DO UPDATE SET version = ?2, type = ?3, width = ?4, height = ?5, bytes = ?6`,
  )
  const drop = db.query<unknown, [number]>('DELETE FROM link_images WHERE link_id = ?')
  return {
    async image(linkId) {
      const row = read.get(linkId)
      return row ? { ...row, bytes: new Uint8Array(row.bytes) } : null
    },
    // `tx` is the database itself: the caller's transaction is this thread's.
    putImage(_tx, linkId, image) {
      if (image) put.run(linkId, image.version, image.type, image.width, image.height, image.bytes)
      else drop.run(linkId)
    },
  }
}
