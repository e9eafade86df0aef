// Key labels cannot forge lines in `key list` (issue 6: a label with a tab or newline did): refused at
// creation, and escaped when a stored one (from before the check) is listed. Through the real CLI.
import { afterAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { MAX_LABEL_LENGTH, printable } from '../../src/accounts'
import { AppError } from '../../src/kernel/errors'
import { makeBox } from '../support/app'
import { createAccount, removeDir, runCli, writeConfig } from '../support/server'

const config = writeConfig()
const cli = (...args: string[]) => runCli([...args, '--config', config.configPath])
afterAll(() => removeDir(config.dir))

describe('at creation', () => {
  test.each([
    ['a tab', 'ci\tlbk_forged'],
    ['a newline', 'ci\n99\tlbk_forged\tadmin'],
    ['a carriage return', 'ci\rx'],
    ['an escape sequence', 'ci\u001b[2Jx'],
    ['DEL', 'ci\u007f'],
    ['a C1 control', 'ci\u0085x'],
    ['a line separator', 'ci\u2028x'],
    ['a right-to-left override', 'ci\u202ex'],
  ])('a label with %s is refused with a clear message', async (_, label) => {
    const box = await makeBox()
    try {
      await box.account('erin')
      let err: unknown
      try {
        await box.accounts.createKey({ account: 'erin', label })
      } catch (e) {
        err = e
      }
      expect(err).toBeInstanceOf(AppError)
      expect((err as AppError).message).toContain('The key label must not contain control characters')
      expect(await box.accounts.listKeys({ account: 'erin' })).toHaveLength(1) // only the account's first key
    } finally {
      await box.cleanup()
    }
  })

  test('ordinary labels, with spaces, accents and emoji, are kept as given; over the length limit is refused', async () => {
    const box = await makeBox()
    try {
      await box.account('erin')
      for (const label of [
        '',
        'ci deploy',
        'Zürich büro',
        'phone 📱',
        'a\\tb (a backslash)',
        'x'.repeat(MAX_LABEL_LENGTH),
      ])
        await box.accounts.createKey({ account: 'erin', label })
      await expect(
        box.accounts.createKey({ account: 'erin', label: 'x'.repeat(MAX_LABEL_LENGTH + 1) }),
      ).rejects.toThrow(/at most/)
    } finally {
      await box.cleanup()
    }
  })

  test('the CLI refuses it: exit 2, the message on stderr, no key made', async () => {
    await createAccount(config.configPath, 'gus')
    const r = await cli('key', 'create', 'gus', '--label', 'ci\n2\tlbk_forged')
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('The key label must not contain control characters')
    expect(r.stdout).not.toContain('lbk_')
  })
})

describe('listing', () => {
  test('printable escapes what could forge lines or columns, and backslashes, so escapes are unambiguous', () => {
    expect(printable('ci\tlbk_x\nnext')).toBe('ci\\tlbk_x\\nnext')
    expect(printable('a\rb\u001bc\u0085d\u2028e\u202ef')).toBe('a\\rb\\u{1b}c\\u{85}d\\u{2028}e\\u{202e}f')
    expect(printable('a\\tb')).toBe('a\\\\tb')
    expect(printable('Zürich 📱')).toBe('Zürich 📱')
  })

  test('a stored label with tab and newline is listed on its own line, escaped', async () => {
    await createAccount(config.configPath, 'hal')
    const forged = 'ci\n999\tlbk_FORGED\thal\tall\t-\t-\t-\tadmin'
    const db = new Database(join(config.dataDir, 'linkbox.db'))
    db.query("UPDATE api_keys SET label = ? WHERE account_id = (SELECT id FROM accounts WHERE name = 'hal')").run(
      forged,
    )
    db.close()
    const list = await cli('key', 'list', 'hal')
    expect(list.code).toBe(0)
    const lines = list.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(2) // the header and hal's one key
    expect(lines.every((l) => l.split('\t').length === 8)).toBe(true)
    expect(lines[1]!.split('\t')[7]).toBe('ci\\n999\\tlbk_FORGED\\thal\\tall\\t-\\t-\\t-\\tadmin')
    expect(list.stdout).not.toMatch(/^999\t/m)
  })
})
