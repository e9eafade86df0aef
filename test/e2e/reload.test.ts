// SIGHUP on a real `serve`: the config file is read again; rate limits, blocked domains and the log's
// settings change at once, other changed keys are named as needing a restart, and a file that no longer
// loads is one error line while the service keeps running on the config it had.
import { afterAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { killAllServers, startServer, toToml, writeConfig, type RunningServer, type TomlDoc } from '../support/server'

afterAll(killAllServers)

const BASE: TomlDoc = {
  server: { host: '127.0.0.1', port: 0 },
  rate: { anon_per_minute: 0, key_per_minute: 0 },
  mail: { smtp_port: 0 },
}

/** Waits (polling the output, no fixed sleep) until `text` has appeared `count` times; 10 s at most. */
async function waitFor(read: () => string, text: string, count = 1) {
  for (let i = 0; i < 400; i++) {
    if (read().split(text).length - 1 >= count) return
    await Bun.sleep(25)
  }
  throw new Error(`"${text}" did not appear ${count} time(s):\n${read()}`)
}

const create = (server: RunningServer, url: string) =>
  fetch(`${server.url}/api/getLink.json`, { method: 'POST', body: new URLSearchParams({ url }) })

test('SIGHUP applies rate.*, links.blocked_domains and log.*; names the keys that need a restart; a broken file keeps the old config', async () => {
  const config = writeConfig()
  const write = (doc: TomlDoc) =>
    writeFileSync(config.configPath, toToml({ data_dir: config.dataDir, ...BASE, ...doc }))
  const server = await startServer({ config })
  try {
    for (let i = 0; i < 5; i++) expect((await create(server, `https://blocked.example/${i}`)).status).toBe(200)

    write({
      rate: { anon_per_minute: 3, key_per_minute: 0 },
      links: { blocked_domains: ['blocked.example'] },
      server: { host: '127.0.0.1', port: 0, base_url: 'https://short.example' },
    })
    server.proc.kill('SIGHUP')
    await waitFor(server.stdout, 'SIGHUP: config')
    const line = server
      .stdout()
      .split('\n')
      .find((l) => l.includes('SIGHUP: config'))!
    expect(JSON.parse(line)).toMatchObject({
      level: 'info',
      applied: ['links.blocked_domains', 'rate.anon_per_minute'],
      restart: ['server.base_url'],
    })
    expect(line).toContain('changed but needs a restart: server.base_url')

    // The blocked domain is refused now; the anonymous limit counts from here (3 a minute).
    const blocked = await create(server, 'https://sub.blocked.example/x')
    expect(blocked.status).toBe(400)
    expect((await blocked.json()).code).toBe('invalid_url')
    let limited: Response | null = null
    for (let i = 0; i < 5 && !limited; i++) {
      const r = await create(server, `https://fine.example/${i}`)
      if (r.status === 429) limited = r
      else expect(r.status).toBe(200)
    }
    expect(limited?.status).toBe(429)
    // base_url is not applied: links still point at the old one.
    expect(await (await fetch(`${server.url}/api/docs/openapi.json`)).text()).not.toContain('short.example')

    // A file that does not load: one error line; the service runs on, with what it had.
    writeFileSync(config.configPath, '[rate]\nanon_per_minute = "lots"\n')
    server.proc.kill('SIGHUP')
    await waitFor(server.stderr, 'SIGHUP')
    expect(server.stderr().trimEnd().split('\n')).toHaveLength(1)
    expect(JSON.parse(server.stderr())).toMatchObject({
      level: 'error',
      msg: 'SIGHUP: config: "rate.anon_per_minute" must be a whole number (got "lots"); the running config is kept',
    })
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    expect((await create(server, 'https://blocked.example/again')).status).toBe(429) // still limited, still blocked

    // log.requests = false: request lines stop.
    write({ log: { requests: false }, links: { blocked_domains: ['blocked.example'] } })
    server.proc.kill('SIGHUP')
    await waitFor(server.stdout, 'SIGHUP: config', 2)
    expect(server.stdout()).toContain('applied rate.anon_per_minute, log.requests')
    expect((await fetch(`${server.url}/after-quiet`)).status).toBe(404)
    expect(await server.stop()).toBe(0)
    expect(server.stdout()).toContain('"path":"/healthz"')
    expect(server.stdout()).not.toContain('/after-quiet')
    // Each reload that changed settings is in the audit log (issue 25), by whoever can signal the service: "cli".
    const db = new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
    expect(
      db
        .query(
          "SELECT actor_kind, action, target, detail, address FROM audit_log WHERE action = 'settings.reload' ORDER BY id",
        )
        .all(),
    ).toEqual([
      {
        actor_kind: 'cli',
        action: 'settings.reload',
        target: `config ${config.configPath}`,
        detail: 'applied links.blocked_domains, rate.anon_per_minute',
        address: 'cli',
      },
      {
        actor_kind: 'cli',
        action: 'settings.reload',
        target: `config ${config.configPath}`,
        detail: 'applied rate.anon_per_minute, log.requests',
        address: 'cli',
      },
    ])
    db.close()
  } finally {
    await server.kill().catch(() => {})
  }
})
