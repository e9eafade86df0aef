// The mail gauges' totals (src/mail/totals.ts): read before a scrape when something changed, never once per delivery.
import { expect, test } from 'bun:test'
import { createTotals } from '../../src/mail/totals'

test('changes only mark the totals; a scrape reads them once, and again only after the next change', async () => {
  let reads = 0
  let messages = 0
  const totals = createTotals({ totals: async () => (reads++, { mailboxes: 1, messages, bytes: messages * 10 }) })
  await totals.ready
  expect(reads).toBe(1)
  for (let i = 0; i < 1_000; i++) {
    messages++
    totals.changed()
  }
  await Bun.sleep(1)
  expect(reads).toBe(1) // a thousand deliveries, no read
  await totals.refresh()
  expect(reads).toBe(2)
  expect(totals.known()).toEqual({ mailboxes: 1, messages: 1_000, bytes: 10_000 })
  await totals.refresh()
  expect(reads).toBe(2) // nothing changed, read less than a second ago
  messages++
  totals.changed()
  await totals.refresh()
  expect(totals.known().messages).toBe(1_001)
})
