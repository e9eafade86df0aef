// The social preview's image in the links storage contract (issue 40: link_images), ONE suite on both engines:
// written in the transaction of the link's insert or change (and gone with it when that rolls back), read back
// byte for byte through another node, replaced, removed, and deleted with its link.
import { describe, expect, test } from 'bun:test'
import {
  CODE_TAKEN,
  type LinkImage,
  type LinkRow,
  type LinkStorage,
  type NewLink,
} from '../../src/links/storage/contract'
import { postgresLinkStorage } from '../../src/links/storage/postgres'
import { sqliteLinkStorage } from '../../src/links/storage/sqlite'
import { engineHarness } from '../support/engines'

const engines = engineHarness()

interface Engine {
  node(): LinkStorage<any>
  close(): Promise<void>
}

async function sqliteEngine(): Promise<Engine> {
  const { connect, close } = engines.sqlite('linkbox-link-images-')
  return { node: () => sqliteLinkStorage(connect()), close }
}
async function postgresEngine(): Promise<Engine> {
  const { pool, close } = await engines.postgres()
  return { node: () => postgresLinkStorage(pool(4)), close }
}

const T0 = 1_800_000_000_123
const newLink = (code: string, o: Partial<NewLink> = {}): NewLink => ({
  code,
  long_url: `https://example.com/${code}`,
  account_id: null,
  mode: 'redirect',
  password_hash: null,
  created: T0,
  expires: null,
  max_visits: null,
  rules: null,
  split: null,
  ...o,
})

/** Every byte value, so that an engine that mangles binary (text, escapes) is caught. */
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 256)
const image = (version: string, seed: number): LinkImage => ({
  version,
  type: version.endsWith('.png') ? 'image/png' : 'image/jpeg',
  width: 1200,
  height: 630,
  bytes: bytes(70_000, seed),
})
const mine = () => true

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('link images on %s', (_name, makeEngine) => {
  test('written with the insert, read through another node, replaced and removed with a change', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const first = image('aaaaaaaaaaaa.jpg', 1)
      const row = await a.insert(newLink('pic', { og_image: first.version, og_title: 'T' }), [], (tx, r) =>
        a.putImage(tx, r.id, first),
      )
      if (row === CODE_TAKEN) throw new Error('taken')
      expect(row.og_image).toBe(first.version)
      const read = await b.image(row.id)
      expect(read).toEqual({ ...first, bytes: expect.any(Uint8Array) })
      expect(Buffer.from(read!.bytes).equals(Buffer.from(first.bytes))).toBe(true)

      const second = image('bbbbbbbbbbbb.png', 2)
      const changed = (await b.change(row, { og_image: second.version }, undefined, T0 + 1, mine, (tx, w) =>
        b.putImage(tx, w.id, second),
      )) as LinkRow
      expect(changed.og_image).toBe(second.version)
      const again = await a.image(row.id)
      expect(again?.version).toBe(second.version)
      expect(again?.type).toBe('image/png')
      expect(Buffer.from(again!.bytes).equals(Buffer.from(second.bytes))).toBe(true)

      const cleared = (await a.change(row, { og_image: null }, undefined, T0 + 2, mine, (tx, w) =>
        a.putImage(tx, w.id, null),
      )) as LinkRow
      expect(cleared.og_image).toBeNull()
      expect(await b.image(row.id)).toBeNull()
      expect(await b.image(999_999)).toBeNull()
    } finally {
      await e.close()
    }
  })

  test('a change that fails after the image was written leaves the old image and version', async () => {
    const e = await makeEngine()
    try {
      const [a, b] = [e.node(), e.node()]
      const first = image('cccccccccccc.jpg', 3)
      const row = (await a.insert(newLink('keep', { og_image: first.version }), [], (tx, r) =>
        a.putImage(tx, r.id, first),
      )) as LinkRow
      const failing = b.change(row, { og_image: 'dddddddddddd.jpg' }, undefined, T0 + 1, mine, (tx, w) => {
        const written = b.putImage(tx, w.id, image('dddddddddddd.jpg', 4))
        if (written instanceof Promise)
          return written.then(() => {
            throw new Error('refused after the write')
          })
        throw new Error('refused after the write')
      })
      await expect(failing).rejects.toThrow('refused after the write')
      expect((await a.byCode('keep'))?.og_image).toBe(first.version)
      expect((await a.image(row.id))?.version).toBe(first.version)
    } finally {
      await e.close()
    }
  })

  test('the image goes with its link', async () => {
    const e = await makeEngine()
    try {
      const a = e.node()
      const row = (await a.insert(newLink('gone', { og_image: 'eeeeeeeeeeee.jpg' }), [], (tx, r) =>
        a.putImage(tx, r.id, image('eeeeeeeeeeee.jpg', 5)),
      )) as LinkRow
      expect(await a.remove(row)).not.toBeNull()
      expect(await a.image(row.id)).toBeNull()
    } finally {
      await e.close()
    }
  })
})
