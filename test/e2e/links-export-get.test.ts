// GET /api/links.json?format=csv (issue 36, SPEC §2a, README "Export and import"): the export as a plain
// download with the key in a header, the same file as POST's (and without format the same list). Real sockets.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { sqliteLinkbox, tempDir, testConfig, type SqliteLinkbox } from '../support/app'

let box: SqliteLinkbox
let base = ''
let key = ''
const dir = tempDir()
beforeAll(async () => {
  box = sqliteLinkbox(testConfig(dir, { server: { host: '127.0.0.1', port: 0 } }))
  base = `http://127.0.0.1:${box.listen().port}`
  key = (await box.accounts.createAccount({ name: 'erin' })).key.key
  for (const alias of ['first', 'second'])
    await fetch(`${base}/api/getLink.json`, {
      method: 'POST',
      headers: { 'x-api-key': key },
      body: new URLSearchParams({ url: `https://example.com/${alias}`, alias }),
    })
})
afterAll(async () => {
  await box.close()
  rmSync(dir, { recursive: true, force: true })
})

test('GET links.json?format=csv with X-Api-Key answers the CSV, the same as POST gives', async () => {
  const got = await fetch(`${base}/api/links.json?format=csv`, { headers: { 'x-api-key': key } })
  expect(got.status).toBe(200)
  expect(got.headers.get('content-type')).toBe('text/csv; charset=utf-8')
  expect(got.headers.get('content-disposition')).toMatch(/^attachment; filename="links-\d{4}-\d\d-\d\d\.csv"$/)
  const text = await got.text()
  expect(text.split('\r\n')[0]).toBe(
    'code,short_url,long_url,mode,created,expires,clicks,tags,max_visits,title,rules,split,has_password,domain,expired_url',
  )
  expect(text).toContain('first,')
  expect(text).toContain('https://example.com/second')
  const posted = await (
    await fetch(`${base}/api/links.json?format=csv`, { method: 'POST', headers: { 'x-api-key': key } })
  ).text()
  expect(text).toBe(posted)
  // Bearer works as everywhere; letter case of the value as for POST.
  expect(
    (await fetch(`${base}/api/links.json?format=CSV`, { headers: { authorization: `Bearer ${key}` } })).status,
  ).toBe(200)
})

test('GET links.json without a key is 401; without format it is the list, as POST gives it', async () => {
  const keyless = await fetch(`${base}/api/links.json?format=csv`)
  expect(keyless.status).toBe(401)
  const list = await fetch(`${base}/api/links.json?limit=1`, { headers: { 'x-api-key': key } })
  expect(list.status).toBe(200)
  const body = await list.json()
  expect([body.return.count, body.return.links.length, body.return.links[0].hex]).toEqual([2, 1, 'second'])
  const bad = await fetch(`${base}/api/links.json?format=xml`, { headers: { 'x-api-key': key } })
  expect(bad.status).toBe(400)
  expect((await bad.json()).message).toContain('"format"')
})
