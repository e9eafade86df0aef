// Webhook deliveries across a crash and a shutdown (issue 10: "Delivery resumes after a restart with
// undelivered events in the outbox (SIGKILL between the commit and the send)"). The real service as a child
// process (`bun src/main.ts serve`) on the same SQLite file, a real receiver on 127.0.0.1 (hence
// media.allow_private_networks = true), every signature checked with `standardwebhooks`.
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase, type Db } from '../../src/db/sqlite'
import { killAllServers, removeDir, startServer, tempDir, writeConfig, type TestConfig } from '../support/server'
import { addAccount, addEndpoint, addEvent, delivery, startReceiver, until, type Receiver } from '../support/webhooks'

// Real processes and restarts: bun's default of 5 s per test is tight on a slow machine.
setDefaultTimeout(60_000)

const cleanups: (() => unknown)[] = []
afterAll(async () => {
  await killAllServers()
  for (const c of cleanups.reverse()) await c()
})

/** A config whose deliverer may reach 127.0.0.1, and its database opened here (migrated, service down). */
function setup(): { config: TestConfig; db: Db } {
  const config = writeConfig(tempDir('linkbox-webhook-durability-'), { media: { allow_private_networks: true } })
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
  const db = openDatabase(join(config.dataDir, 'linkbox.db'))
  cleanups.push(() => removeDir(config.dir))
  cleanups.push(() => db.close())
  return { config, db }
}

/** A receiver that holds every request while `holding()` is true (a receiver that never answers in time). */
function holdingReceiver(holding: () => boolean): Receiver {
  const r = startReceiver(async () => {
    while (holding()) await Bun.sleep(10)
    return new Response('ok')
  })
  cleanups.push(() => r.stop())
  return r
}

// Restated for the lease (issue 22): this used to expect the restarted service to send at once. The deliverer
// now claims each row under a lease (webhooks/storage, LEASE_MS 15 s, renewed while a request is in flight),
// which is what keeps two nodes of one PostgreSQL from sending one event twice; a process starting up cannot
// tell its dead predecessor's lease from a live node's, so it releases none, and the row goes out once the
// lease has run out — no sooner (still under the same webhook-id, still at least once).
test('SIGKILL between the commit and the send: after the restart the event is delivered once the dead process’s lease has run out, under the same webhook-id', async () => {
  const { config, db } = setup()
  let hold = true
  const arrivals: number[] = []
  const r = startReceiver(async () => {
    arrivals.push(Date.now())
    while (hold) await Bun.sleep(10)
    return new Response('ok')
  })
  cleanups.push(() => r.stop())
  const account = addAccount(db, 'owner')
  const endpoint = addEndpoint(db, account, r.url)
  r.secret = endpoint.secret
  // Committed while the service is down: the outbox holds it, nothing has been sent.
  const ev = addEvent(db, account, 'link.created', { hex: 'abc', url: 'https://example.com/' })

  const first = await startServer({ config })
  await until(() => r.got.length === 1, 'the first attempt reaches the receiver')
  await first.kill() // kill -9 while the request is in flight: no answer was recorded
  const killed = delivery(db, ev.id, endpoint.id)
  expect(killed).toMatchObject({ state: 'pending', attempts: 0 })
  // Still under the dead process's lease, at most LEASE_MS (15 s) from its claim.
  const lease = killed.claimed_until
  expect(lease).toBeGreaterThan(Date.now())
  expect(lease).toBeLessThanOrEqual(arrivals[0]! + 15_000)

  hold = false
  const second = await startServer({ config })
  await until(
    () => delivery(db, ev.id, endpoint.id).state === 'ok',
    'delivered after the restart, once the lease ran out',
    30_000,
  )
  expect(arrivals[1]!).toBeGreaterThanOrEqual(lease)
  expect(r.got.map((g) => [g.id, g.verifyError, g.body])).toEqual([
    [ev.webhookId, null, ev.payload],
    [ev.webhookId, null, ev.payload],
  ])
  expect(delivery(db, ev.id, endpoint.id)).toMatchObject({
    state: 'ok',
    attempts: 1,
    last_status: 200,
    claimed_until: 0,
  })

  // An event committed by another process while the service runs (the CLI's `webhook test`) is found by the timer.
  const later = addEvent(db, account, 'link.deleted', { hex: 'abc' })
  await until(() => delivery(db, later.id, endpoint.id).state === 'ok', 'the later event delivered')
  expect(r.got.at(-1)!.id).toBe(later.webhookId)
  expect(await second.stop()).toBe(0)
})

test('SIGTERM does not wait out a receiver that hangs: the row stays pending and goes out after the restart', async () => {
  const { config, db } = setup()
  let hold = true
  const r = holdingReceiver(() => hold)
  const account = addAccount(db, 'owner')
  const endpoint = addEndpoint(db, account, r.url)
  r.secret = endpoint.secret
  const ev = addEvent(db, account, 'mail.received', { address: 'a@localhost' })

  const first = await startServer({ config })
  await until(() => r.got.length === 1, 'the first attempt reaches the receiver')
  // Well under the 15 s delivery timeout: the shutdown cut the request rather than waiting for it.
  expect(await first.stop('SIGTERM', 10_000)).toBe(0)
  // Its lease given back by the shutdown: due at once for the next start.
  expect(delivery(db, ev.id, endpoint.id)).toMatchObject({ state: 'pending', attempts: 0, claimed_until: 0 })

  hold = false
  const second = await startServer({ config })
  await until(() => delivery(db, ev.id, endpoint.id).state === 'ok', 'delivered after the restart')
  expect(new Set(r.got.map((g) => g.id))).toEqual(new Set([ev.webhookId]))
  expect(r.got.every((g) => g.verifyError === null)).toBe(true)
  expect(await second.stop()).toBe(0)
})
