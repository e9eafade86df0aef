// The link forms' helpers (issue 38): the scheme added to an address typed without it, tags written as they
// are kept, the service's refusals in plain words, and the editor's rows read back and checked all at once.
import { describe, expect, test } from 'bun:test'
import { normaliseTags, plainWords, withScheme } from '../../src/dashboard/form-help'
import { routingJson, routingOf, routingProblems } from '../../src/dashboard/routing-form'

describe('withScheme', () => {
  test('a host with a dot, an address or "//host" gets https://; the rest is left for the service to refuse', () => {
    expect(withScheme(' www.example.com/page ')).toBe('https://www.example.com/page')
    expect(withScheme('example.org')).toBe('https://example.org')
    expect(withScheme('example.org:8080/x?y#z')).toBe('https://example.org:8080/x?y#z')
    expect(withScheme('192.168.1.2:81/a')).toBe('https://192.168.1.2:81/a')
    expect(withScheme('//cdn.example.com/a')).toBe('https://cdn.example.com/a')
    expect(withScheme('http://example.com/')).toBe('http://example.com/')
    expect(withScheme('ftp://example.com/')).toBe('ftp://example.com/')
    expect(withScheme('javascript:alert(1)')).toBe('javascript:alert(1)')
    expect(withScheme('localhost/x')).toBe('localhost/x')
    expect(withScheme('just words')).toBe('just words')
  })
})

describe('normaliseTags', () => {
  test('as people type them: case, spaces, "#", accents, repeats', () => {
    expect(normaliseTags('Summer Sale, #News,  Café ,news,,')).toEqual({
      tags: ['summer-sale', 'news', 'cafe'],
      problem: '',
    })
  })
  test('every problem at once, in plain words', () => {
    const { problem } = normaliseTags(`a!, b?, ${'x'.repeat(33)}, c, d, e, f, g, h, i, j`)
    expect(problem).toBe(
      `Tags can hold letters, digits, _ and -: “a!”, “b?” have other characters. A tag can be at most 32 characters: “${'x'.repeat(33)}…” is longer. A link can have at most 10 tags; there are 11.`,
    )
  })
})

test('plainWords: the field by its name, never "The parameter" nor "is invalid"', () => {
  expect(plainWords('The URL', 'The parameter "url" must not be empty.')).toBe('The URL must not be empty.')
  expect(plainWords('The title', 'The parameter "title" is invalid: at most 200 characters (it has 201).')).toBe(
    'The title: at most 200 characters (it has 201).',
  )
  expect(plainWords('The alias', 'The alias "x" is already in use.')).toBe('The alias "x" is already in use.')
})

describe('the editor rows', () => {
  const form = (pairs: [string, string][]) => new URLSearchParams([['routing_editor', '1'], ...pairs])
  test('rows read in order, blank ones left out, turned into the JSON the API takes', () => {
    const v = routingOf(
      form([
        ['rule_0_url', ''],
        ['rule_1_url', 'https://example.com/de'],
        ['rule_1_country', 'DE'],
        ['rule_1_country', 'AT'],
        ['rule_2_device', 'mobile'],
        ['rule_2_url', 'https://m.example.com/'],
        ['split_0_url', 'https://example.com/a'],
        ['split_0_weight', '70'],
        ['split_3_url', 'https://example.com/b'],
        ['split_3_weight', '30'],
      ]),
    )
    expect(routingJson(v)).toEqual({
      rules: JSON.stringify([
        { url: 'https://example.com/de', country: ['DE', 'AT'] },
        { url: 'https://m.example.com/', device: ['mobile'] },
      ]),
      split: JSON.stringify([
        { url: 'https://example.com/a', weight: 70 },
        { url: 'https://example.com/b', weight: 30 },
      ]),
    })
  })
  test('a form without the editor still sends its JSON', () => {
    const v = routingOf(new URLSearchParams({ rules: '[{"url":"https://x.example/","os":["iOS"]}]' }))
    expect(v.rules).toEqual([{ url: 'https://x.example/', device: [], os: ['iOS'], country: [], language: [] }])
  })
  test('every row’s problem at once, by field, naming the row; addresses given their scheme', () => {
    const v = routingOf(
      form([
        ['rule_0_country', 'DE'],
        ['rule_1_url', 'www.example.com/x'],
        ['split_0_url', 'example.com/a'],
        ['split_0_weight', '0'],
      ]),
    )
    const { errors, fixed } = routingProblems(v, () => new Map())
    expect(errors).toEqual({
      rule_0_url: 'Rule 1: type the address to send these visitors to.',
      rule_1:
        'Rule 2: choose at least one device, system, country or language (a rule without one would take every visitor).',
      split: 'A split shares visitors between 2 and 10 destinations; there is 1. Leave every row empty for no split.',
      split_0_weight: 'Destination 1: the weight is a whole number from 1 to 100.',
    })
    expect(fixed).toEqual(['www.example.com/x', 'example.com/a'])
    expect(v.rules[1]!.url).toBe('https://www.example.com/x')
  })
})
