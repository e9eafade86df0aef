// A provider that goes down after linkbox first reached it (issue 36 item 9): "Sign in with …" checks it is
// up when a sign-in starts and, when it is not, goes back to the sign-in page with a sentence saying so
// (a 303, so a reload repeats nothing) instead of sending the browser to the dead provider. Real sockets:
// the provider of test/support/oidc-provider.ts, stopped, answering 503, or replaced by a port that never
// answers; and back up again.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createServer, type Socket } from 'node:net'
const REACH_REUSE_MS = 2000,
  REACH_TIMEOUT_MS = 2500
import type { RunningApp } from '../support/browser'
import { Jar, startWithProvider, throughProvider, visit, type TestProvider } from '../support/oidc-provider'

const UNREACHABLE =
  'Test IdP cannot be reached right now, so signing in with it does not work: try again in a minute, or ask the administrator.'
let provider: TestProvider
let app: RunningApp
let appUrl: string
let offset = 0

beforeAll(async () => {
  ;({ provider, app, appUrl } = await startWithProvider({}, { clock: () => Date.now() + offset }))
})
afterAll(async () => {
  await app?.stop()
  await provider?.stop()
})

/** "Sign in with Test IdP" from a fresh browser: where it is sent, and the page it then shows. */
async function start() {
  const jar = new Jar()
  const res = await visit(jar, `${appUrl}/login/oidc?next=%2Fdashboard`)
  const location = res.headers.get('location') ?? ''
  const page =
    res.status === 303 && location.startsWith('/')
      ? await (await visit(jar, new URL(location, appUrl).href)).text()
      : ''
  return { status: res.status, location, page }
}
const later = () => void (offset += REACH_REUSE_MS + 1)

test('a sign-in works; with the provider answering 503 the button lands on the sign-in page saying so; back up, it works again', async () => {
  const first = await throughProvider(appUrl, provider, 'alice')
  expect((await visit(first.app, first.callback)).status).toBe(303)

  later()
  provider.down = true
  const refused = await start()
  expect(refused.status).toBe(303)
  expect(refused.location).toBe('/login')
  expect(refused.page).toContain(UNREACHABLE)
  expect(refused.page).toContain('Sign in with Test IdP')

  provider.down = false
  later()
  const ok = await start()
  expect(ok.location).toStartWith(`${provider.issuer}/auth?`)
})

test('a provider that stopped (connection refused), then one that never answers: the sign-in page within the timeout, never the provider', async () => {
  const port = Number(new URL(provider.issuer).port)
  later()
  expect((await start()).location).toStartWith(`${provider.issuer}/auth?`)
  await provider.stop()

  later()
  const refused = await start()
  expect(refused.location).toBe('/login')
  expect(refused.page).toContain(UNREACHABLE)

  // The same address taking connections but never answering (a hung provider).
  const held: Socket[] = []
  const silent = createServer((s) => void held.push(s))
  await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', resolve))
  try {
    later()
    const t0 = performance.now()
    const hung = await start()
    const took = performance.now() - t0
    expect(hung.location).toBe('/login')
    expect(hung.page).toContain(UNREACHABLE)
    expect(took).toBeGreaterThanOrEqual(REACH_TIMEOUT_MS - 100)
    expect(took).toBeLessThan(REACH_TIMEOUT_MS + 2000)
  } finally {
    for (const s of held) s.destroy()
    await new Promise<void>((resolve) => silent.close(() => resolve()))
  }
}, 30_000)
