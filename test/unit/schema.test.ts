// The parameter gate of src/web/schema.ts: JSON Schema's meaning (what the document promises), form text
// read as the declared type, every declared message naming its parameter, and the gate before the handler.
import { afterAll, describe, expect, test } from 'bun:test'
import { Type } from '@sinclair/typebox'
import { createFaultLog } from '../../src/web/fault-log'
import { log } from '../../src/kernel/log'
import { createApi, type ApiMethod } from '../../src/web/api'
import { createRateLimiter } from '../../src/web/rate-limit'
import { assertCheckable, checkParams, coerce, violation, type ApiParam } from '../../src/web/schema'
import { makeBox, type TestBox } from '../support/app'

const boxes: TestBox[] = []
afterAll(async () => {
  for (const b of boxes) await b.cleanup()
})

describe('violation: the keywords as JSON Schema defines them', () => {
  test('lengths count code points, not UTF-16 units (as ajv and the document do)', () => {
    const s = Type.String({ maxLength: 3 })
    expect(violation(s, '😀😀😀')).toBeNull() // 6 UTF-16 units
    expect(violation(s, '😀😀😀😀')).toBe('maxLength')
  })
  test('at every length near the bounds, astral or not, min and max compare code points', () => {
    const min = Type.String({ minLength: 3 })
    const both = Type.String({ minLength: 2, maxLength: 4 })
    const points = (n: number, astral: number) => 'a'.repeat(n - astral) + '😀'.repeat(astral)
    for (let n = 0; n <= 6; n++)
      for (let astral = 0; astral <= n; astral++) {
        const v = points(n, astral)
        expect({ v, got: violation(min, v) }).toEqual({ v, got: n < 3 ? 'minLength' : null })
        expect({ v, got: violation(both, v) }).toEqual({ v, got: n < 2 ? 'minLength' : n > 4 ? 'maxLength' : null })
      }
  })
  test('patterns are Unicode regular expressions', () => {
    const s = Type.String({ pattern: '^.$' })
    expect(violation(s, '😀')).toBeNull()
  })
  test('enum, integer, ranges, dates', () => {
    expect(violation(Type.String({ enum: ['a', 'b'] }), 'c')).toBe('enum')
    expect(violation(Type.Integer({ minimum: 1, maximum: 3 }), 1.5)).toBe('type')
    expect(violation(Type.Integer({ minimum: 1, maximum: 3 }), Infinity)).toBe('type')
    expect(violation(Type.Integer({ minimum: 1, maximum: 3 }), 4)).toBe('maximum')
    expect(violation(Type.String({ format: 'date' }), '2024-02-29')).toBeNull()
    expect(violation(Type.String({ format: 'date' }), '2023-02-29')).toBe('format')
    expect(violation(Type.Union([Type.String({ pattern: '^[0-9]+$' }), Type.Integer()]), 12)).toBeNull()
    expect(violation(Type.Union([Type.String({ pattern: '^[0-9]+$' }), Type.Integer()]), 'x')).toBe('anyOf')
  })
  test('a keyword, type or format the gate does not implement is refused at start-up, never ignored', () => {
    expect(() => assertCheckable(Type.String({ format: 'email' }), 'p')).toThrow('format "email"')
    expect(() => assertCheckable(Type.Literal('x'), 'p')).toThrow('"const"')
    expect(() => assertCheckable(Type.Array(Type.String()), 'p')).toThrow()
    expect(() => assertCheckable(Type.String({ minLength: 1, description: 'd', examples: ['x'] }), 'p')).not.toThrow()
  })
})

describe('coerce: what form text stands for', () => {
  const p = (schema: ApiParam['schema'], caseInsensitive = false): ApiParam => ({
    name: 'p',
    schema,
    caseInsensitive,
    error: { code: 'x', messages: { default: 'x' } },
  })
  test('digits are integers, 1/0/true/false booleans, other text stays text; JSON values stay as sent', () => {
    expect(coerce(p(Type.Integer()), '005')).toBe(5)
    expect(coerce(p(Type.Integer()), ' 5')).toBe(' 5')
    expect(coerce(p(Type.Integer()), '-5')).toBe('-5')
    expect(coerce(p(Type.Boolean()), '1')).toBe(true)
    expect(coerce(p(Type.Boolean()), 'false')).toBe(false)
    expect(coerce(p(Type.Boolean()), 'yes')).toBe('yes')
    expect(coerce(p(Type.String()), 12)).toBe(12)
  })
  test('enum members in any letter case, only where the parameter says so', () => {
    expect(coerce(p(Type.String({ enum: ['svg'] }), true), 'SVG')).toBe('svg')
    expect(coerce(p(Type.String({ enum: ['svg'] })), 'SVG')).toBe('SVG')
  })
})

describe('the declared parameters', () => {
  test('every message a parameter can give names it, and every schema is checkable', async () => {
    const b = await makeBox()
    boxes.push(b)
    for (const m of b.methods)
      for (const p of m.params) {
        assertCheckable(p.schema, `${m.path} ${p.name}`)
        for (const message of Object.values(p.error.messages))
          expect(message, `${m.path} ${p.name}`).toContain(`"${p.name}"`)
      }
  })

  test('a password of 128 emoji is 128 characters: accepted, as the service counts them', async () => {
    const b = await makeBox()
    boxes.push(b)
    const ok = await b.post('/api/getLink.json', { url: 'https://example.com/e', password: '😀'.repeat(128) })
    expect([ok.status, ok.body.return?.password]).toEqual([200, true])
    const over = await b.post('/api/getLink.json', { url: 'https://example.com/e', password: '😀'.repeat(129) })
    expect([over.status, over.body.code]).toEqual([400, 'invalid_parameter'])
  })

  test('checkParams: absent values, the required ones, and the first broken parameter in declared order', () => {
    const params: ApiParam[] = [
      {
        name: 'a',
        required: true,
        absent: [''],
        schema: Type.String({ minLength: 2 }),
        error: { code: 'bad_a', messages: { default: 'The parameter "a" is short.' } },
      },
      {
        name: 'b',
        absent: ['', null],
        schema: Type.Integer({ maximum: 9 }),
        error: { code: 'bad_b', messages: { default: 'The parameter "b" is big.' } },
      },
    ]
    const fail = (given: Record<string, unknown>) => {
      try {
        checkParams(params, given)
        return null
      } catch (e) {
        return (e as { code: string }).code
      }
    }
    expect(fail({ a: 'xx' })).toBeNull()
    expect(fail({ a: 'xx', b: '' })).toBeNull()
    expect(fail({ a: 'xx', b: null })).toBeNull()
    expect(fail({ a: '', b: '1' })).toBe('missing_parameter')
    expect(fail({ a: null })).toBe('bad_a')
    expect(fail({ a: 'x', b: '99' })).toBe('bad_a')
    expect(fail({ a: 'xx', b: '99' })).toBe('bad_b')
    expect(fail({ a: 'xx', b: 9 })).toBeNull()
  })
})

test('the pipeline checks the schema before the handler runs, and the handler gets the values as sent', async () => {
  const b = await makeBox()
  boxes.push(b)
  const calls: unknown[] = []
  const probe: ApiMethod = {
    verb: 'GET',
    path: '/api/probe.json',
    key: 'optional',
    summary: 'probe',
    params: [
      {
        name: 'n',
        absent: [''],
        schema: Type.Integer({ minimum: 1, maximum: 3 }),
        error: { code: 'invalid_n', messages: { default: 'The parameter "n" must be 1, 2 or 3.' } },
      },
    ],
    handler: ({ params }) => {
      calls.push(params.n)
      return { n: params.n }
    },
  }
  const { plugin } = createApi([probe], {
    config: b.config,
    accounts: b.accounts,
    limiter: createRateLimiter(),
    clientIp: () => '192.0.2.1',
    faults: createFaultLog(log),
  })
  const call = async (qs: string) => {
    const res = await plugin.handle(new Request(`http://localhost/api/probe.json${qs}`))
    return { status: res.status, body: await res.json() }
  }
  expect(await call('?n=4')).toEqual({
    status: 400,
    body: { status: 'error', message: 'The parameter "n" must be 1, 2 or 3.', code: 'invalid_n' },
  })
  expect(await call('?n=two')).toMatchObject({ status: 400, body: { code: 'invalid_n' } })
  expect(calls).toEqual([])
  expect(await call('?n=2')).toEqual({ status: 200, body: { status: 'success', return: { n: '2' } } })
  expect(await call('?n=')).toMatchObject({ status: 200 })
  expect(calls).toEqual(['2', ''])
})
