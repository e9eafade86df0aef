// UTM parameters merged into destinations (issue 40, SPEC §2a): with and without a query, with a fragment,
// replacing parameters of the same name where they stand, keeping the rest as written, and read back.
import { describe, expect, test } from 'bun:test'
import { AppError } from '../../src/kernel/errors'
import { ownUrlRules } from '../../src/links/validate'
import { applyUtm, mergeUtm, utmOf, utmValuesOf, validateUtm } from '../../src/links/utm'

const rules = ownUrlRules({ base_url: 'https://sho.rt', host: '127.0.0.1', port: 8080 }, [])

describe('mergeUtm', () => {
  test('a URL without a query gets one, in the order source, medium, campaign, term, content', () => {
    expect(
      mergeUtm('https://example.com/page', {
        utm_content: 'c',
        utm_campaign: 'spring',
        utm_source: 'news',
        utm_medium: 'email',
      }),
    ).toBe('https://example.com/page?utm_source=news&utm_medium=email&utm_campaign=spring&utm_content=c')
  })

  test('an existing query keeps its parameters and their order; new ones go after them', () => {
    expect(mergeUtm('https://example.com/p?b=2&a=1', { utm_source: 'x' })).toBe(
      'https://example.com/p?b=2&a=1&utm_source=x',
    )
  })

  test('a parameter of the same name is replaced where it stands; later ones of that name go', () => {
    expect(
      mergeUtm('https://example.com/?utm_medium=old&id=7&utm_source=a&utm_medium=older', {
        utm_medium: 'new',
        utm_source: 'b',
      }),
    ).toBe('https://example.com/?utm_medium=new&id=7&utm_source=b')
  })

  test('the fragment stays after the query, untouched (a query-like fragment too)', () => {
    expect(mergeUtm('https://example.com/a?x=1#top', { utm_source: 's' })).toBe(
      'https://example.com/a?x=1&utm_source=s#top',
    )
    expect(mergeUtm('https://example.com/app#/route?utm_source=no', { utm_source: 's' })).toBe(
      'https://example.com/app?utm_source=s#/route?utm_source=no',
    )
  })

  test('values are percent-encoded (spaces as %20, & = # ? + and non-ASCII); the rest is kept as written', () => {
    expect(mergeUtm('https://example.com/?q=a+b&r=%7E&flag', { utm_campaign: 'Spring & summer #1 = ü+?' })).toBe(
      'https://example.com/?q=a+b&r=%7E&flag&utm_campaign=Spring%20%26%20summer%20%231%20%3D%20%C3%BC%2B%3F',
    )
  })

  test('names are matched decoded and case-sensitive: utm%5Fsource is utm_source, UTM_SOURCE is not', () => {
    expect(mergeUtm('https://e.com/?utm%5Fsource=a&UTM_SOURCE=b', { utm_source: 'c' })).toBe(
      'https://e.com/?utm_source=c&UTM_SOURCE=b',
    )
  })

  test('"" removes every parameter of that name; a query left empty goes with its "?"', () => {
    expect(mergeUtm('https://e.com/?utm_source=a&x=1&utm_source=b', { utm_source: '' })).toBe('https://e.com/?x=1')
    expect(mergeUtm('https://e.com/p?utm_source=a#f', { utm_source: '' })).toBe('https://e.com/p#f')
    expect(mergeUtm('https://e.com/p', { utm_term: '' })).toBe('https://e.com/p')
    expect(mergeUtm('https://e.com/p?', {})).toBe('https://e.com/p?')
  })

  test('empty pieces and parameters without "=" are kept as they are', () => {
    expect(mergeUtm('https://e.com/?a&&b=', { utm_term: 't' })).toBe('https://e.com/?a&&b=&utm_term=t')
  })
})

describe('reading them back', () => {
  test('utmValuesOf gives each decoded (+ as a space), the first of a name, "" when absent', () => {
    const url = mergeUtm('https://e.com/?utm_term=run+fast&utm_term=x', {
      utm_source: 'news letter',
      utm_campaign: 'Ünï & co',
    })
    expect(utmValuesOf(url)).toEqual({
      utm_source: 'news letter',
      utm_medium: '',
      utm_campaign: 'Ünï & co',
      utm_term: 'run fast',
      utm_content: '',
    })
    expect(utmValuesOf('https://e.com/?utm_source=%E0%A4%A&utm_medium#x?utm_content=no').utm_source).toBe('%E0%A4%A')
  })

  test('a merge through the URL parser reads back the same values (what is stored)', () => {
    const values = { utm_source: "o'neil (x) *!~", utm_content: 'a/b:c@d' }
    const stored = applyUtm('https://example.com/x?y=1', values, rules)
    expect(stored).toBe(new URL(stored).href)
    expect(utmValuesOf(stored)).toMatchObject(values)
    // Setting the same values again changes nothing.
    expect(applyUtm(stored, values, rules)).toBe(stored)
  })
})

describe('the values', () => {
  test('0-200 characters, no control characters; errors name the field', () => {
    expect(validateUtm('', 'utm_term')).toBe('')
    expect(validateUtm('ü'.repeat(200), 'utm_term')).toBe('ü'.repeat(200))
    expect(() => validateUtm('x'.repeat(201), 'utm_medium')).toThrow('"utm_medium"')
    expect(() => validateUtm('a\nb', 'utm_source')).toThrow('"utm_source"')
    expect(() => validateUtm(5, 'utm_content')).toThrow('"utm_content" must be a string')
  })

  test('utmOf: on create "" is not given; on update "" removes; none given is null', () => {
    expect(utmOf({}, false)).toBeNull()
    expect(utmOf({ utm_source: '', utm_term: null }, false)).toBeNull()
    expect(utmOf({ utm_source: '', utm_medium: 'm' }, true)).toEqual({ utm_source: '', utm_medium: 'm' })
  })

  test('a destination the values would make longer than 4096 characters is refused naming the first value', () => {
    const long = `https://example.com/?p=${'x'.repeat(4000)}`
    try {
      applyUtm(long, { utm_campaign: 'c'.repeat(100) }, rules)
      throw new Error('accepted')
    } catch (err) {
      expect(err).toBeInstanceOf(AppError)
      expect((err as AppError).message).toContain('"utm_campaign"')
      expect((err as AppError).message).toContain('4096')
    }
  })
})
