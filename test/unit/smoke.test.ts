import { afterAll, expect, test } from 'bun:test'
import { makeBox } from '../support/app'

const box = await makeBox()
afterAll(() => box.cleanup())

test('anonymous link creation answers with the envelope', async () => {
  const r = await box.post('/api/getLink.json', { url: 'https://example.com/' })
  expect(r.status).toBe(200)
  expect(r.body.status).toBe('success')
  expect(r.body.return.hex).toMatch(/^[A-Za-z0-9]{6}$/)
})
