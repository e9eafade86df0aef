// The account service on the async storages (issue 22): what the move onto AccountStorage must keep.
// - The key cache: a lookup whose read takes time (as every read does on PostgreSQL) while a revoke commits
//   answers its own request, but does not keep that answer: the next request with the key is refused.
// - disableWithin: a disable made inside another change's transaction (a report closed by disabling its
//   owner) commits with it, or its refusal rolls that change back (the report stays open).
import { afterEach, expect, test } from 'bun:test'
import { createAccountService } from '../../src/accounts'
import { CLI } from '../../src/audit'
import { sqliteStorages } from '../../src/app/storages'
import { makeBox, type TestBox } from '../support/app'

const boxes: TestBox[] = []
afterEach(async () => {
  for (const b of boxes.splice(0)) await b.cleanup()
})

test('a key lookup still reading when a revoke commits answers its own request but is not cached: the next request is refused', async () => {
  const box = await makeBox()
  boxes.push(box)
  const key = await box.account('alice')
  const storages = sqliteStorages(box.db)
  // The SQLite storage, its key read held until released: the read has happened, its answer is on its way.
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let readsHeld = 0
  const accounts = createAccountService({
    audit: storages.audit,
    accounts: {
      ...storages.accounts,
      // Nothing tells of changes made elsewhere here (there are none): only the service's own revoke empties the cache.
      keysChanged: () => false,
      async activeKeyByHash(hash) {
        const row = await storages.accounts.activeKeyByHash(hash)
        if (readsHeld++ === 0) await held
        return row
      },
    },
  })
  const slow = accounts.authenticate(key)
  await Bun.sleep(10)
  await accounts.revokeKey(key.slice(0, 11), CLI)
  release()
  // Read before the revoke committed: this request goes on as the key's.
  expect((await slow)?.accountName).toBe('alice')
  // Every request after the revoke is refused (a cached answer from the slow read would let it through).
  expect(await accounts.authenticate(key)).toBeNull()
  expect(await accounts.authenticate(key)).toBeNull()
})

test('disableWithin: inside another change’s transaction the disable commits with it; a refusal rolls that change back', async () => {
  const box = await makeBox()
  boxes.push(box)
  await box.account('root', { admin: true })
  const bobKey = await box.account('bob')
  expect((await box.accounts.authenticate(bobKey))?.accountName).toBe('bob')
  const note = box.db.query(
    "INSERT INTO audit_log (at, actor_kind, action, detail) VALUES (0, 'system', 'test.note', ?)",
  )
  const notes = () =>
    (box.db.query("SELECT detail FROM audit_log WHERE action = 'test.note'").all() as { detail: string }[]).map(
      (r) => r.detail,
    )
  const disables = () => box.db.query("SELECT target, detail FROM audit_log WHERE action = 'account.disable'").all()

  // The last active administrator: refused inside the transaction, which rolls back with the other change.
  expect(() =>
    box.db.transaction(() => {
      note.run('closed with root')
      box.accounts.disableWithin(box.db, 'root', CLI)
    })(),
  ).toThrow('root is the last active administrator')
  expect(notes()).toEqual([])
  expect(disables()).toEqual([])
  expect(
    (box.db.query("SELECT disabled FROM accounts WHERE name = 'root'").get() as { disabled: number | null }).disabled,
  ).toBeNull()

  // Another account: disabled with the other change and its audit row, its key refused from the next request.
  box.db.transaction(() => {
    note.run('closed with bob')
    box.accounts.disableWithin(box.db, 'bob', CLI)
  })()
  expect(notes()).toEqual(['closed with bob'])
  expect(disables()).toEqual([{ target: expect.stringMatching(/^account bob \(#\d+\)$/), detail: '0 sessions ended' }])
  expect(await box.accounts.authenticate(bobKey)).toBeNull()
  const r = await box.post('/api/links.json', {}, { 'x-api-key': bobKey })
  expect(r.status).toBe(401)
})

test('a report closed by disabling its owner, the last active administrator: refused, and the report stays open with nothing written', async () => {
  const box = await makeBox()
  boxes.push(box)
  const key = await box.account('root', { admin: true })
  const code = (await box.post('/api/getLink.json', { url: 'https://spam.example/' }, { 'x-api-key': key })).body.return
    .hex
  const { id } = await box.abuse.report({ code, reason: 'spam', text: '', contact: '' })
  // A disable whose refusal came after the close's commit (setDisabled as the change) would close the report anyway.
  await expect(
    box.abuse.closeReport(id!, 'account_disabled', null, CLI, {
      change: (tx) => box.accounts.disableWithin(tx, 'root', CLI),
    }),
  ).rejects.toThrow('root is the last active administrator')
  expect(box.db.query('SELECT action, closed FROM link_reports WHERE id = ?').get(id!)).toEqual({
    action: null,
    closed: null,
  })
  expect(box.db.query("SELECT disabled FROM accounts WHERE name = 'root'").get()).toEqual({ disabled: null })
  expect(
    box.db.query("SELECT count(*) AS n FROM audit_log WHERE action IN ('report.close', 'account.disable')").get(),
  ).toEqual({ n: 0 })
  expect((await box.accounts.authenticate(key))?.accountName).toBe('root')
})
