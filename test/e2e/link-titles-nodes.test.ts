// Titles fetched from the destination on several nodes (issue 40 item 3, SPEC §11): two app instances on one
// PostgreSQL database, each listening on a port of its own with its fetcher running, and one page server that
// counts what it is asked. Links made on both nodes, and due links a crashed node left behind (its creations
// committed, its fetches never made; one with a lease run out), are each fetched once in all, by one node or the other.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openLinkbox } from '../../src/app/app'
import { METRICS_TOKEN, tempDir, testConfig } from '../support/app'
import { sharedPostgres, type Postgres } from '../support/postgres'
import { removeDir } from '../support/server'
import { eventually, html, pageServer, type PageServer } from '../support/pages'

setDefaultTimeout(60_000)

let pg: Postgres
let url: string
let site: PageServer
const dirs: string[] = []
const boxes: Awaited<ReturnType<typeof openLinkbox>>[] = []

beforeAll(async () => {
  pg = await sharedPostgres()
  url = await pg.createDatabase({ migrated: true })
  site = await pageServer(async (req, res) => {
    // A little slow, so that both nodes have fetches under way at once.
    await Bun.sleep(40)
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end(html(`<title>Title of ${req.url}</title><meta property="og:description" content="About ${req.url}">`))
  })
}, 120_000)

afterAll(async () => {
  for (const box of boxes) await box.close()
  await site?.close()
  dirs.forEach(removeDir)
  await pg?.stop()
})

async function node() {
  const dir = tempDir('linkbox-titles-node-')
  dirs.push(dir)
  const config = testConfig(dir, {
    database: { url },
    server: { port: 0, metrics_token: METRICS_TOKEN },
    media: { allow_private_networks: true },
  })
  const box = await openLinkbox(config, { metadata: { pollMs: 50 } })
  boxes.push(box)
  const server = box.listen()
  return { box, origin: `http://127.0.0.1:${server.port}` }
}

test('links made on two nodes and due links a crashed node left are each fetched once in all', async () => {
  const [a, b] = [await node(), await node()]
  const { key } = (await a.box.accounts.createAccount({ name: 'alice' })).key
  const sql = new Bun.SQL(url)
  try {
    const [{ id: owner }] = await sql`SELECT id FROM accounts WHERE name = 'alice'`
    // What a node that died right after committing its creations leaves: due rows nobody is fetching, and one
    // claimed under a lease that has run out.
    const now = Date.now()
    const left = Array.from({ length: 12 }, (_, i) => ({
      code: `left${i}`,
      long_url: `${site.origin}/left/${i}`,
      account_id: owner,
      created: now,
      updated: now,
      meta_due: i === 0 ? now - 1 : now,
    }))
    await sql`INSERT INTO links ${sql(left)}`
    const made = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const on = i % 2 === 0 ? a : b
        const res = await fetch(`${on.origin}/api/getLink.json`, {
          method: 'POST',
          body: new URLSearchParams({ url: `${site.origin}/made/${i}`, alias: `made${i}` }),
          headers: { 'x-api-key': key },
        })
        expect(res.status).toBe(200)
        return `made${i}`
      }),
    )
    const codes = [...made, ...left.map((l) => l.code)]
    await eventually(async () => {
      const [{ n }] = await sql`SELECT count(*)::int AS n FROM links WHERE title <> '' AND meta_due IS NULL`
      return n === codes.length
    }, 'every link titled')
    const rows = await sql`SELECT code, long_url, title, og_description FROM links ORDER BY code`
    for (const r of rows) {
      const path = new URL(r.long_url).pathname
      expect([r.title, r.og_description]).toEqual([`Title of ${path}`, `About ${path}`])
    }
    await Bun.sleep(300)
    const paths = site.seen.map((s) => s.path)
    expect(paths.length).toBe(codes.length)
    expect(new Set(paths).size).toBe(codes.length)
    // Both nodes took part (each fetched from its own creations at least).
    const fetchedBy = await Promise.all(
      [a, b].map(async (n) => {
        const metrics = new Request('http://localhost/metrics', {
          headers: { authorization: `Bearer ${METRICS_TOKEN}` },
        })
        const text = await (await n.box.app.handle(metrics)).text()
        return Number(/linkbox_link_title_fetches_total\{outcome="filled"\} (\d+)/.exec(text)?.[1] ?? 0)
      }),
    )
    expect(fetchedBy[0]! + fetchedBy[1]!).toBe(codes.length)
    expect(Math.min(...fetchedBy)).toBeGreaterThan(0)
  } finally {
    await sql.close()
  }
})
