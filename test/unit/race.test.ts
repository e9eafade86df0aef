// update.json awaits the password hash between reading a link and writing it (issue 6, attacker finding 1).
// These tests hold that await open with a hasher they release themselves, and drive the real interleaving
// through the API: a delete, another account's create, a concurrent update. Each runs many times.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeBox, type TestBox } from '../support/app'

/** A real argon2id hasher whose next call can be held until the test lets it finish. */
function gatedHasher() {
  let holdNext = false
  let entered: (() => void) | null = null
  let release: (() => void) | null = null
  return {
    hash: async (password: string) => {
      const hashed = await Bun.password.hash(password, { algorithm: 'argon2id', memoryCost: 1024, timeCost: 1 })
      if (holdNext) {
        holdNext = false
        const gate = new Promise<void>((done) => (release = done))
        entered?.()
        await gate
      }
      return hashed
    },
    /** The next hash waits; the returned promise settles once that hash has been called and is waiting. */
    holdNext(): Promise<void> {
      holdNext = true
      return new Promise<void>((done) => (entered = done))
    },
    release() {
      release?.()
      release = null
    },
  }
}

const ROUNDS = 20

describe('update.json while its password hash is pending', () => {
  const hasher = gatedHasher()
  let box: TestBox
  let keyA: string
  let keyB: string
  const A = () => ({ 'x-api-key': keyA })
  const B = () => ({ 'x-api-key': keyB })
  beforeAll(async () => {
    box = await makeBox({}, { hashPassword: hasher.hash })
    keyA = await box.account('alice')
    keyB = await box.account('bob')
  })
  afterAll(() => box.cleanup())
  const rowOf = (code: string) =>
    box.db
      .query('SELECT id, code, long_url, account_id, mode, password_hash, expires FROM links WHERE code = ?')
      .get(code) as {
      id: number
      code: string
      long_url: string
      account_id: number
      mode: string
      password_hash: string | null
      expires: number | null
    } | null

  test(`a delete and another account's create in the window: the update gets 404, the new link is untouched (${ROUNDS} rounds)`, async () => {
    for (let i = 0; i < ROUNDS; i++) {
      // Even rounds: bob takes the freed alias itself; odd rounds: bob gets a generated code.
      const alias = `race${i}`
      const made = await box.post(
        '/api/getLink.json',
        { url: `https://alice.example/${i}`, ...(i % 2 === 0 ? { alias } : {}) },
        A(),
      )
      expect(made.status).toBe(200)
      const code = made.body.return.hex as string
      const aliceId = rowOf(code)!.id

      const held = hasher.holdNext()
      const pending = box.post(
        '/api/update.json',
        { code, url: 'https://attacker.example/', password: 'attacker-pass', mode: 'frame', expire: '60' },
        A(),
      )
      await held
      expect((await box.post('/api/delete.json', { code }, A())).status).toBe(200)
      const bobs = await box.post(
        '/api/getLink.json',
        {
          url: `https://bob.example/${i}`,
          password: 'bob-secret',
          mode: 'preview',
          expire: '86400',
          ...(i % 2 === 0 ? { alias } : {}),
        },
        B(),
      )
      expect(bobs.status).toBe(200)
      const bobCode = bobs.body.return.hex as string
      const before = rowOf(bobCode)!
      hasher.release()
      const answer = await pending
      expect({ round: i, status: answer.status, code: answer.body.code }).toEqual({
        round: i,
        status: 404,
        code: 'not_found',
      })
      expect(rowOf(bobCode)).toEqual(before)
      expect(before).toMatchObject({ long_url: `https://bob.example/${i}`, mode: 'preview' })
      expect(await Bun.password.verify('bob-secret', before.password_hash!)).toBe(true)
      // Row ids are never reused, so nothing pending for alice's old id can reach bob's link.
      expect(before.id).toBeGreaterThan(aliceId)
    }
  })

  test(`a delete in the window gives 404, not 500 (${ROUNDS} rounds)`, async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const code = (await box.post('/api/getLink.json', { url: `https://alice.example/d${i}` }, A())).body.return
        .hex as string
      const held = hasher.holdNext()
      const pending = box.post('/api/update.json', { code, password: 'new-pass' }, A())
      await held
      expect((await box.post('/api/delete.json', { code }, A())).status).toBe(200)
      hasher.release()
      const answer = await pending
      expect({ round: i, status: answer.status, code: answer.body.code }).toEqual({
        round: i,
        status: 404,
        code: 'not_found',
      })
      expect(rowOf(code)).toBeNull()
    }
  })

  test(`two concurrent updates of different fields both stick (${ROUNDS} rounds)`, async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const code = (await box.post('/api/getLink.json', { url: `https://alice.example/u${i}` }, A())).body.return
        .hex as string
      const held = hasher.holdNext()
      const withPassword = box.post('/api/update.json', { code, password: 'pass-1' }, A())
      await held
      const other = await box.post(
        '/api/update.json',
        { code, url: `https://alice.example/moved${i}`, mode: 'preview' },
        A(),
      )
      expect(other.status).toBe(200)
      hasher.release()
      const answer = await withPassword
      expect(answer.status).toBe(200)
      // The answer is the link as stored after both: the other update's fields are there too.
      expect(answer.body.return).toMatchObject({
        long_url: `https://alice.example/moved${i}`,
        mode: 'preview',
        password: true,
      })
      const row = rowOf(code)!
      expect({ round: i, long_url: row.long_url, mode: row.mode }).toEqual({
        round: i,
        long_url: `https://alice.example/moved${i}`,
        mode: 'preview',
      })
      expect(await Bun.password.verify('pass-1', row.password_hash!)).toBe(true)
    }
  })

  test('an update that sends only a password leaves the expiry and mode as they are', async () => {
    const code = (
      await box.post('/api/getLink.json', { url: 'https://alice.example/keep', mode: 'frame', expire: '3600' }, A())
    ).body.return.hex
    const before = rowOf(code)!
    const r = await box.post('/api/update.json', { code, password: 'x' }, A())
    expect(r.status).toBe(200)
    expect(rowOf(code)).toMatchObject({ long_url: before.long_url, mode: 'frame', expires: before.expires })
  })
})

test('clicks buffered for a deleted link are not credited to the next link created', async () => {
  const box = await makeBox({}, { clicks: { intervalMs: 3_600_000 } })
  try {
    const key = await box.account('carol')
    const ua = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0' }
    const old = (await box.post('/api/getLink.json', { url: 'https://old.example/' }, { 'x-api-key': key })).body.return
      .hex
    for (let i = 0; i < 3; i++)
      expect((await box.request(`/${old}`, { redirect: 'manual', headers: ua })).status).toBe(302)
    expect(box.recorder.pending).toBe(3)
    expect((await box.post('/api/delete.json', { code: old }, { 'x-api-key': key })).status).toBe(200)
    const next = (await box.post('/api/getLink.json', { url: 'https://next.example/' })).body.return.hex
    await box.recorder.flush()
    expect(box.db.query('SELECT clicks, bots FROM links WHERE code = ?').get(next)).toEqual({ clicks: 0, bots: 0 })
    expect(box.db.query('SELECT count(*) AS n FROM click_days').get()).toEqual({ n: 0 })
  } finally {
    await box.cleanup()
  }
})
