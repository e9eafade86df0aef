// The audit log (issue 25, SPEC §7) through the real app on a real socket and its SQLite file: every change
// to accounts, keys and webhooks, every sign-in (failed ones too, never the password) and every admin action
// leaves exactly its row — actor, action, target, client address — made by the API, the dashboard's forms and
// the CLI; the row is written in the change's transaction (a change that does not commit leaves none, and a
// row that cannot be written undoes its change); the admin's page shows and filters them, others are refused;
// `linkbox audit --since --json` prints them; the keep_days sweep.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { auditRow, CLI } from '../../src/audit'
import { sqliteAuditRows } from '../../src/audit/storage/sqlite'
import { openDatabase } from '../../src/db/sqlite'
import { buildConfig } from '../../src/kernel/config'
import { ConfigError } from '../../src/kernel/errors'
import { makeBox, type TestBox } from '../support/app'
import { startApp, type RunningApp } from '../support/browser'
import { follow, overSocket, postForm, signIn, type SignedIn } from '../support/dashboard'
import { removeDir, runCli, writeConfig } from '../support/server'

const PW = 'correct horse battery'

interface Expected {
  actor_kind: string
  actor_name: string | null
  action: string
  target: RegExp
  address: string
  detail?: RegExp
}
type Row = Expected & { id: number; actor_id: number | null; detail: string; at: number }

const rowsAfter = (db: Database, id: number) =>
  db.query('SELECT * FROM audit_log WHERE id > ? ORDER BY id').all(id) as Row[]
const lastId = (db: Database) => (db.query('SELECT coalesce(max(id), 0) AS n FROM audit_log').get() as { n: number }).n

describe('every change leaves exactly its row (API, dashboard forms)', () => {
  let app: RunningApp
  let http: ReturnType<typeof overSocket>
  let root: SignedIn
  const ip = '127.0.0.1'
  beforeAll(async () => {
    app = startApp()
    http = overSocket(app.url)
    await app.accounts.createAccount({ name: 'root', password: PW, admin: true })
    root = await signIn(http, 'root', PW)
  })
  afterAll(async () => app?.stop())

  test('table of actions: actor, action, target, address', async () => {
    const db = app.db
    const by = (name: string) => ({ actor_kind: 'account', actor_name: name, address: ip })
    const idOf = (name: string) => (db.query('SELECT id FROM accounts WHERE name = ?').get(name) as { id: number }).id
    let bob!: SignedIn
    let bobKey = ''
    let hookKey = ''
    let hookId = 0
    let code = ''

    const cases: { name: string; act: () => Promise<unknown>; rows: () => Expected[] }[] = [
      {
        name: 'dashboard: create an account',
        act: async () =>
          expect((await postForm(http, root, '/dashboard/admin/accounts', { name: 'bob', password: PW })).status).toBe(
            303,
          ),
        rows: () => [
          {
            ...by('root'),
            action: 'account.create',
            target: new RegExp(`^account bob \\(#${idOf('bob')}\\)$`),
            detail: /^user, with a dashboard password; first key lbk_\w{7}… \(#\d+\)$/,
          },
        ],
      },
      {
        name: 'sign-in with the right password',
        act: async () => (bob = await signIn(http, 'bob', PW)),
        rows: () => [{ ...by('bob'), action: 'signin.ok', target: /^account bob \(#\d+\)$/, detail: /^password$/ }],
      },
      {
        name: 'sign-in with a wrong password',
        act: async () => expect(signIn(http, 'bob', 'not the password at all')).rejects.toThrow('sign-in refused'),
        rows: () => [
          {
            actor_kind: 'anonymous',
            actor_name: 'bob',
            address: ip,
            action: 'signin.failed',
            target: /^account bob$/,
            detail: /^wrong password$/,
          },
        ],
      },
      {
        name: 'sign-in with an unknown name',
        act: async () => expect(signIn(http, 'mallory', PW)).rejects.toThrow('sign-in refused'),
        rows: () => [
          {
            actor_kind: 'anonymous',
            actor_name: 'mallory',
            address: ip,
            action: 'signin.failed',
            target: /^account mallory$/,
            detail: /^no such account$/,
          },
        ],
      },
      {
        name: 'dashboard: create a key',
        act: async () => {
          const res = await postForm(http, bob, '/dashboard/keys', { scope: 'links', label: 'deploy' })
          expect(res.status).toBe(303)
          bobKey = (await (await follow(http, res, bob.cookie)).text()).match(
            /id="new-key" readonly value="([^"]+)"/,
          )![1]!
        },
        rows: () => [
          {
            ...by('bob'),
            action: 'key.create',
            target: /^key lbk_\w{7}… \(#\d+\) of bob$/,
            detail: /^scopes links; label "deploy"$/,
          },
        ],
      },
      {
        name: "dashboard: change a key's label and scopes",
        act: async () => {
          const made = (await app.accounts.keysOfAccount(idOf('bob'))).find((k) => k.label === 'deploy')!
          expect(
            (await postForm(http, bob, `/dashboard/keys/${made.id}/edit`, { scope: 'links', label: 'renamed' })).status,
          ).toBe(303)
        },
        rows: () => [
          {
            ...by('bob'),
            action: 'key.update',
            target: /^key lbk_\w{7}… \(#\d+\) of bob$/,
            detail: /^label "deploy" → "renamed"$/,
          },
        ],
      },
      {
        name: 'dashboard: revoke a key',
        act: async () => {
          const first = (await app.accounts.keysOfAccount(idOf('bob'))).find(
            (k) => k.label === 'created with the account',
          )!
          expect((await postForm(http, bob, `/dashboard/keys/${first.id}/revoke`, {})).status).toBe(303)
        },
        rows: () => [{ ...by('bob'), action: 'key.revoke', target: /^key lbk_\w{7}… \(#\d+\) of bob$/ }],
      },
      {
        name: 'API: create a webhook',
        act: async () => {
          // A key with the webhooks scope, made by the service itself (no `by`: the system's row comes first).
          hookKey = (await app.accounts.createKey({ account: 'bob', scopes: ['webhooks'] })).key
          const res = await fetch(`${app.url}/api/webhooks.json`, {
            method: 'POST',
            headers: { 'x-api-key': hookKey },
            body: new URLSearchParams({ action: 'create', url: 'http://127.0.0.1:9/hook' }),
          })
          expect(res.status).toBe(200)
          hookId = ((await res.json()) as any).return.id
        },
        rows: () => [
          {
            actor_kind: 'system',
            actor_name: 'linkbox',
            address: '',
            action: 'key.create',
            target: /^key lbk_\w{7}… \(#\d+\) of bob$/,
          },
          {
            ...by('bob'),
            action: 'webhook.create',
            target: new RegExp(`^webhook ${hookId} of bob: http://127\\.0\\.0\\.1:9/hook$`),
            detail: /^events /,
          },
        ],
      },
      {
        name: 'API: change a webhook (events, then disabled)',
        act: async () => {
          const post = (fields: Record<string, string>) =>
            fetch(`${app.url}/api/webhooks.json`, {
              method: 'POST',
              headers: { 'x-api-key': hookKey },
              body: new URLSearchParams({ id: String(hookId), ...fields }),
            })
          expect((await post({ action: 'update', events: 'link.deleted' })).status).toBe(200)
          expect((await post({ action: 'update', enabled: 'false' })).status).toBe(200)
          // Nothing changed: no row.
          expect((await post({ action: 'update', enabled: 'false' })).status).toBe(200)
        },
        rows: () => [
          {
            ...by('bob'),
            action: 'webhook.update',
            target: new RegExp(`^webhook ${hookId} of bob: `),
            detail: /^events .* → link\.deleted$/,
          },
          {
            ...by('bob'),
            action: 'webhook.update',
            target: new RegExp(`^webhook ${hookId} of bob: `),
            detail: /^disabled$/,
          },
        ],
      },
      {
        name: 'API: a new secret for a webhook (never the secret in the row); a redelivery with nothing failed changes nothing',
        act: async () => {
          const post = (fields: Record<string, string>) =>
            fetch(`${app.url}/api/webhooks.json`, {
              method: 'POST',
              headers: { 'x-api-key': hookKey },
              body: new URLSearchParams({ id: String(hookId), ...fields }),
            })
          const rotated = await post({ action: 'rotate' })
          expect(rotated.status).toBe(200)
          const secret = ((await rotated.json()) as any).return.secret as string
          expect(JSON.stringify(app.db.query('SELECT * FROM audit_log').all())).not.toContain(secret)
          expect((await post({ action: 'redeliver_failed' })).status).toBe(200)
        },
        rows: () => [
          {
            ...by('bob'),
            action: 'webhook.rotate',
            target: new RegExp(`^webhook ${hookId} of bob: `),
            detail: /^the old secret valid until \d{4}-\d\d-\d\dT/,
          },
        ],
      },
      {
        name: 'API: delete a webhook',
        act: async () => {
          const res = await fetch(`${app.url}/api/webhooks.json`, {
            method: 'POST',
            headers: { 'x-api-key': hookKey },
            body: new URLSearchParams({ action: 'delete', id: String(hookId) }),
          })
          expect(res.status).toBe(200)
        },
        rows: () => [{ ...by('bob'), action: 'webhook.delete', target: new RegExp(`^webhook ${hookId} of bob: `) }],
      },
      {
        name: 'dashboard: create a webhook',
        act: async () => {
          const res = await postForm(http, bob, '/dashboard/webhooks', {
            url: 'http://127.0.0.1:9/other',
            events: 'link.created',
          })
          expect(res.status).toBe(303)
          hookId = Number(res.headers.get('location')!.match(/\/dashboard\/webhooks\/(\d+)/)![1])
        },
        rows: () => [
          {
            ...by('bob'),
            action: 'webhook.create',
            target: new RegExp(`^webhook ${hookId} of bob: http://127\\.0\\.0\\.1:9/other$`),
            detail: /^events link\.created$/,
          },
        ],
      },
      {
        name: 'dashboard: delete a webhook',
        act: async () =>
          expect((await postForm(http, bob, `/dashboard/webhooks/${hookId}/delete`, {})).status).toBe(303),
        rows: () => [{ ...by('bob'), action: 'webhook.delete', target: new RegExp(`^webhook ${hookId} of bob: `) }],
      },
      {
        name: 'admin: disable an account',
        act: async () =>
          expect((await postForm(http, root, '/dashboard/admin/accounts/disable', { account: 'bob' })).status).toBe(
            303,
          ),
        rows: () => [
          { ...by('root'), action: 'account.disable', target: /^account bob \(#\d+\)$/, detail: /^1 session ended$/ },
        ],
      },
      {
        name: 'admin: enable an account',
        act: async () =>
          expect((await postForm(http, root, '/dashboard/admin/accounts/enable', { account: 'bob' })).status).toBe(303),
        rows: () => [{ ...by('root'), action: 'account.enable', target: /^account bob \(#\d+\)$/ }],
      },
      {
        name: 'admin: a new password',
        act: async () =>
          expect(
            (
              await postForm(http, root, `/dashboard/admin/account/${idOf('bob')}/password`, {
                password: 'another long password',
              })
            ).status,
          ).toBe(303),
        rows: () => [{ ...by('root'), action: 'account.password', target: /^account bob \(#\d+\)$/ }],
      },
      {
        name: 'admin: ban a host',
        act: async () =>
          expect(
            (await postForm(http, root, '/dashboard/admin/reports/bans', { host: 'phish.example', reason: 'phishing' }))
              .status,
          ).toBe(303),
        rows: () => [{ ...by('root'), action: 'host.ban', target: /^host phish\.example$/, detail: /^phishing$/ }],
      },
      {
        name: 'admin: lift a ban',
        act: async () =>
          expect(
            (await postForm(http, root, '/dashboard/admin/reports/bans/remove', { host: 'phish.example' })).status,
          ).toBe(303),
        rows: () => [{ ...by('root'), action: 'host.unban', target: /^host phish\.example$/ }],
      },
      {
        name: 'admin: disable a link',
        act: async () => {
          const res = await fetch(`${app.url}/api/getLink.json`, {
            method: 'POST',
            headers: { 'x-api-key': bobKey },
            body: new URLSearchParams({ url: 'https://example.com/x' }),
          })
          code = ((await res.json()) as any).return.hex
          expect((await postForm(http, root, '/dashboard/admin/reports/link', { code, reason: 'spam' })).status).toBe(
            303,
          )
        },
        rows: () => [{ ...by('root'), action: 'link.disable', target: new RegExp(`^link ${code}$`), detail: /^spam$/ }],
      },
      {
        name: 'admin: enable a link',
        act: async () =>
          expect((await postForm(http, root, '/dashboard/admin/reports/link', { code, do: 'enable' })).status).toBe(
            303,
          ),
        rows: () => [{ ...by('root'), action: 'link.enable', target: new RegExp(`^link ${code}$`) }],
      },
      {
        name: 'admin: close a report (dismissed)',
        act: async () => {
          const { id } = await app.abuse.report({ code, reason: 'spam', text: '', contact: '' })
          expect((await postForm(http, root, `/dashboard/admin/reports/${id}`, { action: 'dismissed' })).status).toBe(
            303,
          )
        },
        rows: () => [
          {
            ...by('root'),
            action: 'report.close',
            target: new RegExp(`^report \\d+ \\(link ${code}\\)$`),
            detail: /^dismissed$/,
          },
        ],
      },
      {
        name: 'admin: close a report by disabling its link (two changes, one transaction)',
        act: async () => {
          const { id } = await app.abuse.report({ code, reason: 'phishing', text: '', contact: '' })
          expect(
            (await postForm(http, root, `/dashboard/admin/reports/${id}`, { action: 'link_disabled' })).status,
          ).toBe(303)
        },
        rows: () => [
          { ...by('root'), action: 'link.disable', target: new RegExp(`^link ${code}$`) },
          {
            ...by('root'),
            action: 'report.close',
            target: new RegExp(`^report \\d+ \\(link ${code}\\)$`),
            detail: /^link_disabled$/,
          },
        ],
      },
      {
        name: 'admin: delete an account, its links kept',
        act: async () =>
          expect(
            (await postForm(http, root, `/dashboard/admin/account/${idOf('bob')}/delete`, { links: 'keep' })).status,
          ).toBe(303),
        rows: () => [
          {
            ...by('root'),
            action: 'account.delete',
            target: /^account bob \(#\d+\)$/,
            detail: /^its 1 link kept, owned by nobody$/,
          },
        ],
      },
    ]
    for (const c of cases) {
      const before = lastId(db)
      await c.act()
      const expected = c.rows()
      const got = rowsAfter(db, before)
      expect({ case: c.name, actions: got.map((r) => r.action) }).toEqual({
        case: c.name,
        actions: expected.map((r) => r.action),
      })
      expected.forEach((want, i) => {
        const r = got[i]!
        expect({ case: c.name, kind: r.actor_kind, actor: r.actor_name, address: r.address }).toEqual({
          case: c.name,
          kind: want.actor_kind,
          actor: want.actor_name,
          address: want.address,
        })
        expect({ case: c.name, target: r.target }).toEqual({ case: c.name, target: expect.stringMatching(want.target) })
        if (want.detail)
          expect({ case: c.name, detail: r.detail }).toEqual({
            case: c.name,
            detail: expect.stringMatching(want.detail),
          })
        if (r.actor_kind === 'account') expect(r.actor_id).toBeNumber()
      })
    }
    // No password, right or wrong, is anywhere in the log.
    const all = JSON.stringify(db.query('SELECT * FROM audit_log').all())
    for (const secret of [PW, 'not the password at all', 'another long password']) expect(all).not.toContain(secret)
  })
})

describe('the row is part of its change', () => {
  let box: TestBox
  afterEach(async () => box?.cleanup())

  test('a change that fails to commit leaves no row (a trigger RAISEs on the disable)', async () => {
    box = await makeBox()
    await box.accounts.createAccount({ name: 'root', admin: true })
    await box.accounts.createAccount({ name: 'carol' })
    box.db.exec(
      `CREATE TRIGGER no_disable BEFORE UPDATE OF disabled ON accounts WHEN NEW.disabled IS NOT NULL BEGIN SELECT RAISE(ABORT, 'disabling is refused'); END`,
    )
    const before = lastId(box.db)
    await expect(box.accounts.setDisabled('carol', true, CLI)).rejects.toThrow('disabling is refused')
    expect(rowsAfter(box.db, before)).toEqual([])
    expect((box.db.query("SELECT disabled FROM accounts WHERE name = 'carol'").get() as any).disabled).toBeNull()
    // The same change without the trigger commits, with its row.
    box.db.exec('DROP TRIGGER no_disable')
    await box.accounts.setDisabled('carol', true, CLI)
    expect(rowsAfter(box.db, before).map((r) => [r.action, r.actor_kind, r.address])).toEqual([
      ['account.disable', 'cli', 'cli'],
    ])
  })

  test('a UNIQUE violation inside the change: no account, no row', async () => {
    box = await makeBox()
    // A key hash that is taken already makes the first key's insert fail after the account's insert.
    box.db.exec(
      `CREATE TRIGGER same_hash BEFORE INSERT ON api_keys BEGIN INSERT INTO api_keys (account_id, prefix, hash, scopes, created) VALUES (NEW.account_id, 'x', 'taken', 'links', 0); INSERT INTO api_keys (account_id, prefix, hash, scopes, created) VALUES (NEW.account_id, 'x', 'taken', 'links', 0); END`,
    )
    const before = lastId(box.db)
    await expect(box.accounts.createAccount({ name: 'dave' }, CLI)).rejects.toThrow(/UNIQUE/)
    expect(rowsAfter(box.db, before)).toEqual([])
    expect(box.db.query("SELECT * FROM accounts WHERE name = 'dave'").get()).toBeNull()
  })

  test('a row that cannot be written undoes its change (the key stays live, the webhook stays)', async () => {
    box = await makeBox({ media: { allow_private_networks: true } })
    const { key } = await box.accounts.createAccount({ name: 'erin' })
    const made = await box.webhooks.createFor(
      await box.webhooks.accountId('erin'),
      { url: 'http://127.0.0.1:9/h' },
      {},
      CLI,
    )
    box.db.exec(
      `CREATE TRIGGER no_rows BEFORE INSERT ON audit_log WHEN NEW.action IN ('key.revoke', 'webhook.delete', 'account.delete') BEGIN SELECT RAISE(ABORT, 'the log is full'); END`,
    )
    await expect(box.accounts.revokeKey(key.prefix, CLI)).rejects.toThrow('the log is full')
    expect((await box.accounts.authenticate(key.key))?.accountName).toBe('erin')
    await expect(box.webhooks.deleteById(made.id, CLI)).rejects.toThrow('the log is full')
    expect((await box.webhooks.listFor(await box.webhooks.accountId('erin'))).webhooks.map((w) => w.id)).toEqual([
      made.id,
    ])
    await expect(box.accounts.deleteAccount('erin', { withLinks: true }, CLI)).rejects.toThrow('the log is full')
    expect(box.db.query("SELECT name FROM accounts WHERE name = 'erin'").get()).toEqual({ name: 'erin' })
  })

  test('record() outside a transaction is refused: a row must ride with its change', () => {
    const db = openDatabase(':memory:')
    const audit = sqliteAuditRows(db)
    expect(() => audit.insert(db, auditRow(CLI, { action: 'key.revoke', target: 'x' }, Date.now()))).toThrow(
      'must be written inside the transaction of its change',
    )
    db.close()
  })
})

describe('accounts an admin manages: refusals', () => {
  let box: TestBox
  afterEach(async () => box?.cleanup())

  test('nobody disables or deletes their own account; the last active admin is neither disabled nor deleted (CLI too)', async () => {
    box = await makeBox()
    await box.accounts.createAccount({ name: 'root', admin: true })
    await box.accounts.createAccount({ name: 'ops', admin: true })
    const root = { actor: { kind: 'account' as const, id: 1, name: 'root' }, address: '127.0.0.1' }
    await expect(box.accounts.setDisabled('root', true, root)).rejects.toThrow('You cannot disable your own account')
    await expect(box.accounts.deleteAccount('root', { withLinks: false }, root)).rejects.toThrow(
      'You cannot delete your own account',
    )
    await box.accounts.setDisabled('ops', true, root)
    await expect(box.accounts.setDisabled('root', true, CLI)).rejects.toThrow('root is the last active administrator')
    await expect(box.accounts.deleteAccount('root', { withLinks: false }, CLI)).rejects.toThrow(
      'root is the last active administrator',
    )
    // A disabled admin is not the last one standing: it may go.
    await box.accounts.deleteAccount('ops', { withLinks: false }, root)
    const rows = box.db.query("SELECT action FROM audit_log WHERE action LIKE 'account.d%' ORDER BY id").all()
    expect(rows).toEqual([{ action: 'account.disable' }, { action: 'account.delete' }])
  })
})

describe('the keep_days sweep', () => {
  let box: TestBox
  afterEach(async () => box?.cleanup())

  test('deletes rows older than audit.keep_days and keeps newer ones (the clock injected)', async () => {
    const DAY = 86_400_000
    let now = Date.UTC(2026, 0, 1)
    box = await makeBox({ audit: { keep_days: 30 } }, { clock: () => now })
    await box.accounts.createAccount({ name: 'old' }, CLI) // 2026-01-01
    now += 20 * DAY
    await box.accounts.createAccount({ name: 'middle' }, CLI) // 2026-01-21
    now += 20 * DAY
    await box.accounts.createAccount({ name: 'new' }, CLI) // 2026-02-10
    expect(await box.audit.sweep(box.config.audit.keep_days)).toBe(1) // before 2026-01-11
    expect(
      box.db
        .query('SELECT target FROM audit_log ORDER BY id')
        .all()
        .map((r: any) => r.target.split(' ')[1]),
    ).toEqual(['middle', 'new'])
    now += 15 * DAY
    expect(await box.audit.sweep(box.config.audit.keep_days)).toBe(1)
    expect(await box.audit.sweep(box.config.audit.keep_days)).toBe(0)
    expect(box.db.query('SELECT count(*) AS n FROM audit_log').get()).toEqual({ n: 1 })
  })

  test("the feature's job runs the sweep when the jobs start (and hourly after), with audit.keep_days", async () => {
    const DAY = 86_400_000
    let now = Date.UTC(2026, 0, 1)
    box = await makeBox({ audit: { keep_days: 2 }, mail: { smtp_port: 0 } }, { clock: () => now })
    await box.accounts.createAccount({ name: 'early' }, CLI)
    now += 3 * DAY
    await box.accounts.createAccount({ name: 'late' }, CLI)
    await box.startSmtp() // starts the periodic jobs: each runs at once
    await Bun.sleep(10)
    expect(box.db.query('SELECT target FROM audit_log').all()).toEqual([{ target: 'account late (#2)' }])
  })

  test('audit.keep_days: 365 by default, checked and named when wrong, in the example file', async () => {
    expect(buildConfig({}).audit.keep_days).toBe(365)
    for (const bad of [0, -1, 1.5, '30', 40_000])
      expect(() => buildConfig({ audit: { keep_days: bad } })).toThrow(/config: "audit\.keep_days" must be/)
    expect(() => buildConfig({ audit: { keep: 3 } })).toThrow(new ConfigError('config: unknown key "audit.keep"'))
    const example = await Bun.file(join(import.meta.dir, '../..', 'linkbox.example.toml')).text()
    expect(example).toMatch(/^\[audit\]\nkeep_days = 365 /m)
  })
})

describe('the command line', () => {
  const config = writeConfig(undefined, { media: { allow_private_networks: true } })
  const cli = (...args: string[]) => runCli([...args, '--config', config.configPath])
  const db = () => new Database(join(config.dataDir, 'linkbox.db'), { readonly: true })
  afterAll(() => removeDir(config.dir))

  test('each command that changes something leaves one row (actor cli, address cli); audit --since --json prints them', async () => {
    const run = async (args: string[], stdin?: string) => {
      const r = await runCli([...args, '--config', config.configPath], { stdin })
      // account create without --password off a terminal says how to set one later (issue 38): that note alone.
      const stderr = r.stderr.replace(/^account \S+ has no dashboard password yet\. .*\n/, '')
      expect({ args, code: r.code, stderr }).toEqual({ args, code: 0, stderr: '' })
      return r.stdout
    }
    const steps: { args: string[]; stdin?: string; action: string; target: RegExp }[] = [
      { args: ['account', 'create', 'root', '--admin'], action: 'account.create', target: /^account root \(#1\)$/ },
      {
        args: ['account', 'create', 'gus', '--password', '-'],
        stdin: `${PW}\n`,
        action: 'account.create',
        target: /^account gus \(#2\)$/,
      },
      {
        args: ['key', 'create', 'gus', '--scopes', 'qr'],
        action: 'key.create',
        target: /^key lbk_\w{7}… \(#3\) of gus$/,
      },
      { args: ['key', 'revoke', '3'], action: 'key.revoke', target: /^key lbk_\w{7}… \(#3\) of gus$/ },
      {
        args: ['webhook', 'create', 'gus', 'http://127.0.0.1:9/hook'],
        action: 'webhook.create',
        target: /^webhook 1 of gus: http:\/\/127\.0\.0\.1:9\/hook$/,
      },
      { args: ['webhook', 'delete', '1'], action: 'webhook.delete', target: /^webhook 1 of gus: / },
      { args: ['account', 'disable', 'gus'], action: 'account.disable', target: /^account gus \(#2\)$/ },
      { args: ['account', 'enable', 'gus'], action: 'account.enable', target: /^account gus \(#2\)$/ },
      {
        args: ['account', 'password', 'gus', '--password', '-'],
        stdin: 'a brand new password\n',
        action: 'account.password',
        target: /^account gus \(#2\)$/,
      },
      { args: ['account', 'delete', 'gus', '--with-links'], action: 'account.delete', target: /^account gus \(#2\)$/ },
    ]
    for (const step of steps) {
      let before = 0
      if (step !== steps[0]) {
        const d = db()
        before = lastId(d)
        d.close()
      }
      await run(step.args, step.stdin)
      const after = db()
      const rows = rowsAfter(after, before)
      after.close()
      expect({
        args: step.args,
        rows: rows.map((r) => [r.action, r.actor_kind, r.actor_name, r.actor_id, r.address]),
      }).toEqual({ args: step.args, rows: [[step.action, 'cli', 'cli', null, 'cli']] })
      expect({ args: step.args, target: rows[0]!.target }).toEqual({
        args: step.args,
        target: expect.stringMatching(step.target),
      })
    }
    // A command that changes nothing leaves nothing.
    const d = db()
    const count = lastId(d)
    d.close()
    await run(['account', 'list'])
    expect((await cli('account', 'disable', 'root')).stderr).toBe(
      'linkbox: root is the last active administrator: make another account an administrator first, so that someone can still manage this service.\n',
    )
    const d2 = db()
    expect(lastId(d2)).toBe(count)
    // Backdate the first row: --since leaves it out.
    d2.close()
    const w = new Database(join(config.dataDir, 'linkbox.db'))
    w.query('UPDATE audit_log SET at = ? WHERE id = 1').run(Date.UTC(2020, 0, 1))
    w.close()

    const lines = (await run(['audit', '--since', '2021-01-01', '--json'])).trimEnd().split('\n')
    const parsed = lines.map((l) => JSON.parse(l))
    expect(parsed.map((p) => p.action)).toEqual(steps.slice(1).map((s) => s.action))
    expect(parsed[0]).toEqual({
      id: 2,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      actor: { kind: 'cli', id: null, name: 'cli' },
      action: 'account.create',
      target: 'account gus (#2)',
      detail: expect.stringMatching(/^user, with a dashboard password; first key lbk_\w{7}… \(#2\)$/),
      address: 'cli',
    })
    expect((await run(['audit', '--json'])).trimEnd().split('\n')).toHaveLength(steps.length)
    const table = (await run(['audit', '--since', '2021-01-01T00:00:00Z'])).trimEnd().split('\n')
    expect(table[0]).toBe('time\tactor\taction\ttarget\taddress\tdetail')
    expect(table[1]).toMatch(/^\S+Z\tcli\taccount\.create\taccount gus \(#2\)\tcli\tuser, /)
    expect(table).toHaveLength(steps.length) // the header and all but the backdated row
    const bad = await cli('audit', '--since', 'yesterday')
    expect([bad.code, bad.stderr]).toEqual([
      2,
      'linkbox: --since needs a date (YYYY-MM-DD) or a time (ISO 8601) (got "yesterday"); linkbox audit --help lists the options\n',
    ])
  }, 60_000)
})
