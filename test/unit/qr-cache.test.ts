// The public QR images' disk cache forgets deleted links (issue 6: the files of deleted links stayed).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { makeBox, type TestBox } from '../support/app'

let box: TestBox
let key: string
let cacheDir: string
beforeAll(async () => {
  box = await makeBox()
  key = await box.account('owner')
  cacheDir = join(box.dir, 'cache', 'qr')
})
afterAll(() => box.cleanup())

const files = () => (existsSync(cacheDir) ? readdirSync(cacheDir).sort() : [])
const create = async (url: string) =>
  (await box.post('/api/getLink.json', { url }, { 'x-api-key': key })).body.return.hex as string
const remove = async (hex: string) =>
  expect((await box.post('/api/delete.json', { code: hex }, { 'x-api-key': key })).status).toBe(200)

/** Waits for the event loop to run what a settled rendering scheduled (a bounded number of turns, no clock). */
async function settle(until: () => boolean) {
  for (let i = 0; i < 100 && !until(); i++) await new Promise((r) => setImmediate(r))
}

test('deleting a link removes its cached images, and only its own', async () => {
  const kept = await create('https://example.com/kept')
  const gone = await create('https://example.com/gone')
  for (const hex of [kept, gone])
    for (const ext of ['png', 'svg']) expect((await box.request(`/qr/${hex}.${ext}`)).status).toBe(200)
  const before = files()
  expect(before).toHaveLength(4)
  await remove(gone)
  const after = files()
  expect(after).toHaveLength(2)
  // The kept link's images are the ones left, and still served from the cache.
  for (const ext of ['png', 'svg']) expect((await box.request(`/qr/${kept}.${ext}`)).status).toBe(200)
  expect(files()).toEqual(after)
  expect((await box.request(`/qr/${gone}.png`)).status).toBe(404)
})

test('an image being rendered when its link is deleted is removed once it is saved', async () => {
  const hex = await create('https://example.com/racing')
  const before = files()
  const image = box.request(`/qr/${hex}.png`) // not awaited: the rendering is under way
  await remove(hex)
  expect((await image).status).toBe(200)
  await settle(() => files().length === before.length)
  expect(files()).toEqual(before)
})

test('a code used again after a delete gets its image again', async () => {
  const alias = 'qr-again'
  await box.post('/api/getLink.json', { url: 'https://example.com/1', alias }, { 'x-api-key': key })
  const first = Buffer.from(await (await box.request(`/qr/${alias}.png`)).arrayBuffer())
  await remove(alias)
  await box.post('/api/getLink.json', { url: 'https://example.com/2', alias }, { 'x-api-key': key })
  const second = await box.request(`/qr/${alias}.png`)
  expect(second.status).toBe(200)
  expect(Buffer.from(await second.arrayBuffer()).equals(first)).toBe(true)
  expect(files().filter((f) => f.endsWith('.png')).length).toBeGreaterThan(0)
})
