// The media service on the async storages (src/media/service.ts, tickets.ts): two "nodes" on one database —
// two connections to one SQLite file, or two pools on one PostgreSQL database — each with its own media
// service, data_dir and file cache, and the one signing secret the nodes share. A link that node A's
// download.json made is redeemed through node B (its ticket read from the database B is handed), byte for
// byte; the link checks out on B before any lookup; the sweep on either removes the expired tickets.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import type { Caller } from '../../src/kernel/caller'
import { postgresStorages } from '../../src/app/storages-postgres'
import { sqliteStorages } from '../../src/app/storages'
import { createFaultLog } from '../../src/web/fault-log'
import { createLogger } from '../../src/kernel/log'
import { createMediaService, type MediaService } from '../../src/media/service'
import type { TicketStorage } from '../../src/media/storage/contract'
import { createYtdlp } from '../../src/media/ytdlp'
import { startGuardProxy, type GuardProxy } from '../../src/kernel/net/proxy'
import { createLinkSigner } from '../../src/kernel/signing'
import { testConfig } from '../support/app'
import { engineHarness } from '../support/engines'
import { startMediaFixtures, type MediaFixtures } from '../support/media-fixtures'

const engines = engineHarness()
let fx: MediaFixtures
let proxy: Promise<GuardProxy> | null = null

beforeAll(async () => {
  fx = await startMediaFixtures()
})
afterAll(async () => {
  if (proxy) await (await proxy).stop()
  await fx?.stop()
})

interface Engine {
  tickets(): TicketStorage
  account(name: string): Promise<number>
  close(): Promise<void>
}

async function sqliteEngine(): Promise<Engine> {
  const { main, connect, close } = engines.sqlite('linkbox-media-nodes-')
  return {
    tickets: () => sqliteStorages(connect()).tickets,
    account: async (name) =>
      (main.query('INSERT INTO accounts (name, created) VALUES (?, 0) RETURNING id').get(name) as { id: number }).id,
    close,
  }
}

async function postgresEngine(): Promise<Engine> {
  const { main, pool, close } = await engines.postgres()
  return {
    tickets: () => postgresStorages(pool()).tickets,
    account: async (name) =>
      Number((await main.sql`INSERT INTO accounts (name, created) VALUES (${name}, 0) RETURNING id`)[0].id),
    close,
  }
}

const secret = randomBytes(32)
const silent = createFaultLog(createLogger({ write: () => {} }))

/** A node's media service: its own data_dir (file cache) and its own tickets' connection, the shared secret. */
function node(tickets: TicketStorage, clock: () => number): MediaService {
  const config = testConfig(engines.tracked('linkbox-media-node-'), { media: { allow_private_networks: true } })
  return createMediaService({
    tickets,
    config,
    signer: createLinkSigner(secret),
    clock,
    ytdlp: createYtdlp({ ytdlpPath: config.media.ytdlp_path, dataDir: config.data_dir }),
    proxy: async () => (await (proxy ??= startGuardProxy({ allowPrivate: true }))).url,
    canMerge: false,
    faults: silent,
  })
}

describe.each([
  ['SQLite', sqliteEngine],
  ['PostgreSQL', postgresEngine],
] as const)('media tickets on two nodes, %s', (_name, makeEngine) => {
  test('a link made by A’s download.json is redeemed through B, byte for byte; a forged one is refused before any lookup; the sweep removes expired tickets', async () => {
    const e = await makeEngine()
    let now = Date.now()
    const clock = () => now
    try {
      const [a, b] = [node(e.tickets(), clock), node(e.tickets(), clock)]
      const accountId = await e.account('media')
      const caller: Caller = {
        accountId,
        accountName: 'media',
        admin: false,
        scopes: new Set(['media'] as const),
        keyId: null,
        via: 'key',
      }
      const answer = await a.download(caller, `${fx.url('mp4')}?node=${_name}`)
      expect(answer.formats).toHaveLength(1)
      const link = new URL(answer.formats[0]!.url)
      const id = link.pathname.split('/').pop()!
      const [exp, sig] = [link.searchParams.get('exp'), link.searchParams.get('sig')]

      const ticket = await b.ticket(id, exp, sig)
      expect(ticket).toMatchObject({
        id: Number(id),
        account_id: accountId,
        page_url: `${fx.url('mp4')}?node=${_name}`,
        method: 'direct',
      })
      const res = await b.serve(ticket, new Request(link))
      expect(res.status).toBe(200)
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(fx.bytes('clip.mp4'))

      // The same account asking A again gets the same tickets (kept with A's cached answer).
      expect(new URL((await a.download(caller, `${fx.url('mp4')}?node=${_name}`)).formats[0]!.url).pathname).toBe(
        link.pathname,
      )
      // Another account asking twice at once: its tickets are stored once, both answers carry them.
      const other: Caller = { ...caller, accountId: await e.account('other'), accountName: 'other' }
      const both = await Promise.all([
        a.download(other, `${fx.url('mp4')}?node=${_name}`),
        a.download(other, `${fx.url('mp4')}?node=${_name}`),
      ])
      const [p1, p2] = both.map((r) => new URL(r.formats[0]!.url).pathname)
      expect(p1).toBe(p2!)
      expect(p1).not.toBe(link.pathname)

      await expect(b.ticket(id, exp, `${sig}x`)).rejects.toMatchObject({ status: 403 })
      await expect(b.ticket(String(Number(id) + 1000), exp, sig)).rejects.toMatchObject({ status: 403 })

      // Past every link the cached answer can carry: the sweep on B removes A's tickets.
      now += 24 * 3600_000
      expect(await b.sweep()).toBe(2)
      expect(await a.sweep()).toBe(0)
    } finally {
      await e.close()
    }
  }, 60_000)
})
