// Statistics people can take away (issue 24): custom from/to dates on the public page (/<code>+) and on the
// owner's dashboard page (/dashboard/links/<code>/stats), and the CSV downloads of the days and of the
// breakdowns — checked against stats.json for the same window, with clicks made on known days (the app's
// clock is moved), a referrer built to be a spreadsheet formula, and a password-protected link.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { breakable, csvCell, windowOf } from '../../src/links/stats-view'
import { makeBox, type TestBox } from '../support/app'
import { accountWithPassword, signIn, type SignedIn } from '../support/dashboard'

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
const FORMULA_REFERRER = 'http://=HYPERLINK("x")/page'
let now = Date.parse('2026-06-20T12:00:00Z')
let box: TestBox
let alice: SignedIn
let bob: SignedIn
let code: string // alice's link, clicked on known days
let locked: string // alice's password-protected link

/** A minimal RFC 4180 parser (quoted fields, doubled quotes, CRLF lines) for what the app sends. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++
      else if (c === '"') quoted = false
      else field += c
    } else if (c === '"') quoted = true
    else if (c === ',') row.push(field), (field = '')
    else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field), rows.push(row), (row = []), (field = ''), i++
    } else field += c
  }
  if (field !== '' || row.length) throw new Error('the CSV does not end with CRLF')
  return rows
}

async function clickOn(day: string, times: number, referer = '') {
  now = Date.parse(`${day}T10:00:00Z`)
  for (let i = 0; i < times; i++)
    await box.request(`/${code}`, {
      redirect: 'manual',
      headers: { 'user-agent': CHROME, ...(referer ? { referer } : {}) },
    })
}
const statsJson = async (c: string, from: string, to: string, key?: string) =>
  (await box.post('/api/stats.json', { code: c, from, to }, key ? { 'x-api-key': key } : {})).body.return

beforeAll(async () => {
  box = await makeBox({}, { clock: () => now })
  await accountWithPassword(box, 'alice', 'alice password')
  await accountWithPassword(box, 'bob', 'bob password')
  alice = await signIn(box, 'alice', 'alice password')
  bob = await signIn(box, 'bob', 'bob password')
  const create = async (fields: Record<string, string>) => {
    const res = await box.request('/dashboard/links', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: alice.cookie },
      body: new URLSearchParams({ _csrf: alice.csrf, ...fields }).toString(),
    })
    expect(res.status).toBe(303)
    return fields.alias!
  }
  code = await create({ url: 'https://example.com/campaign', alias: 'sales-2026' })
  locked = await create({ url: 'https://secret.example/only-for-owner', alias: 'locked-one', password: 'pw' })
  await clickOn('2026-06-01', 2)
  await clickOn('2026-06-03', 3, 'https://news.example/item')
  await clickOn('2026-06-10', 4, FORMULA_REFERRER)
  await clickOn('2026-06-18', 1)
  now = Date.parse('2026-06-20T12:00:00Z')
  await box.recorder.flush()
})
afterAll(() => box.cleanup())

describe('CSV cells', () => {
  test('text starting with = + - @ (or a tab or CR) is neutralised; quotes, commas and line breaks are quoted (RFC 4180)', () => {
    expect(csvCell('=HYPERLINK("http://evil","x")')).toBe(`"'=HYPERLINK(""http://evil"",""x"")"`)
    expect(csvCell('+1+2')).toBe("'+1+2")
    expect(csvCell('-2+3')).toBe("'-2+3")
    expect(csvCell('@SUM(A1)')).toBe("'@SUM(A1)")
    expect(csvCell('\t=1')).toBe("'\t=1")
    expect(csvCell('a,b')).toBe('"a,b"')
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"')
    expect(csvCell('say "hi"')).toBe('"say ""hi"""')
    expect(csvCell('news.example')).toBe('news.example')
    expect(csvCell('a=b')).toBe('a=b')
    expect(csvCell(42)).toBe('42')
  })
})

describe('URLs shown whole', () => {
  test('a <wbr> after each separator, every part escaped (an "&" escaped is not split)', () => {
    expect(breakable('https://a.example/p?q=<script>&x="y"')).toBe(
      'https:/<wbr>/<wbr>a.<wbr>example/<wbr>p?<wbr>q=<wbr>&lt;script&gt;&amp;<wbr>x=<wbr>&quot;y&quot;',
    )
    expect(breakable('plain')).toBe('plain')
  })
  test('the window of a URL: dates when either is given (kept to 20 characters), else the ?days= period', () => {
    expect(windowOf('http://h/c+')).toEqual({ kind: 'period', days: 30 })
    expect(windowOf('http://h/c+?days=7&from=&to=')).toEqual({ kind: 'period', days: 7 })
    expect(windowOf('http://h/c+?days=7&from=2026-01-01')).toEqual({ kind: 'dates', from: '2026-01-01', to: '' })
    expect(windowOf(`http://h/c+?to=${'x'.repeat(100)}`)).toEqual({ kind: 'dates', from: '', to: 'x'.repeat(20) })
  })
})

describe('the public page with dates', () => {
  test("from/to show only those days: the numbers are stats.json's for the same window", async () => {
    const res = await box.request(`/${code}+?from=2026-06-02&to=2026-06-10`)
    expect(res.status).toBe(200)
    const html = await res.text()
    const s = await statsJson(code, '2026-06-02', '2026-06-10')
    expect(s.days.map((d: any) => d.clicks).reduce((a: number, b: number) => a + b)).toBe(7) // 3 on the 3rd, 4 on the 10th
    expect(html).toContain(
      '<span class="label">Clicks in these days</span><span class="value">7</span><span class="note">2026-06-02 to 2026-06-10</span>',
    )
    const bars = [...html.matchAll(/<title>(\d{4}-\d{2}-\d{2}): (\d+) clicks?, (\d+) visitors?<\/title>/g)].map(
      (m) => ({ date: m[1], clicks: Number(m[2]), visitors: Number(m[3]) }),
    )
    expect(bars).toEqual(s.days)
    // The days outside the window are not there (the 1st and the 18th had clicks).
    expect(html).not.toContain('2026-06-01: 2')
    // No period is current; the form shows the dates.
    expect(html).not.toContain('aria-current="page"')
    expect(html).toContain('name="from" type="date" min="1970-01-01" max="2026-06-20" value="2026-06-02"')
    expect(html).toContain('value="2026-06-10"')
    // The CSV links carry the same window.
    expect(html).toContain(`href="/${code}+.csv?table=days&amp;from=2026-06-02&amp;to=2026-06-10"`)
  })

  test('only "from": "to" is today; only "to": the 30 days up to it (as stats.json)', async () => {
    const a = await (await box.request(`/${code}+?from=2026-06-15`)).text()
    expect(a).toContain('<span class="note">2026-06-15 to 2026-06-20</span>')
    const b = await (await box.request(`/${code}+?to=2026-06-05&from=`)).text()
    expect(b).toContain('<span class="note">2026-05-07 to 2026-06-05</span>')
    expect(b).toContain('<span class="value">5</span>')
  })

  test('refused dates: 400, a message naming the field at its input, the last 30 days shown, no stack trace', async () => {
    const cases: [string, string, RegExp][] = [
      [
        'from=2026-06-10&to=2026-06-02',
        'from',
        /The start date \(from\) is invalid: a date on or before &quot;to&quot;\./,
      ],
      ['from=2026-13-01&to=2026-06-02', 'from', /The start date \(from\) is invalid: a date as YYYY-MM-DD/],
      ['from=2026-06-01&to=yesterday', 'to', /The end date \(to\) is invalid: a date as YYYY-MM-DD/],
      [
        'from=2024-01-01&to=2026-06-01',
        'from',
        /The start date \(from\) is invalid: at most 366 days before &quot;to&quot;\./,
      ],
      [`from=${'9'.repeat(5000)}`, 'from', /The start date \(from\) is invalid/],
    ]
    for (const [query, field, message] of cases) {
      const res = await box.request(`/${code}+?${query}`)
      expect({ query, status: res.status }).toEqual({ query, status: 400 })
      const html = await res.text()
      expect(html).toMatch(message)
      expect(html).toContain(`id="range-${field}" name="${field}" type="date" min="1970-01-01" max="2026-06-20" value=`)
      expect(html).toMatch(new RegExp(`id="range-${field}"[^>]*aria-invalid="true" aria-describedby="range-error"`))
      expect(html).toContain('The last 30 days are shown.')
      expect(html).toContain('<span class="note">2026-05-22 to 2026-06-20</span>')
      expect(html).not.toMatch(/\bat \S+\.ts:\d+|AppError|Error: /)
      // What was typed comes back bounded (20 characters) and escaped.
      if (query.startsWith('from=999')) expect(html).toContain(`value="${'9'.repeat(20)}"`)
    }
    const csv = await box.request(`/${code}+.csv?from=2026-06-10&to=2026-06-02`)
    expect(csv.status).toBe(400)
    expect(csv.headers.get('content-type')).toContain('text/html')
    expect(await csv.text()).toContain('The start date (from) is invalid')
  })
})

describe('CSV downloads', () => {
  test("the days: text/csv, an attachment with a safe name, rows equal to stats.json's days", async () => {
    const res = await box.request(`/${code}+.csv?table=days&from=2026-06-01&to=2026-06-19`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe(
      'attachment; filename="linkbox-sales-2026-days-2026-06-01-to-2026-06-19.csv"',
    )
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    const rows = parseCsv(await res.text())
    const s = await statsJson(code, '2026-06-01', '2026-06-19')
    expect(rows[0]).toEqual(['date', 'clicks', 'visitors'])
    expect(rows.slice(1)).toEqual(s.days.map((d: any) => [d.date, String(d.clicks), String(d.visitors)]))
    expect(s.days.some((d: any) => d.visitors > 0)).toBe(true)
    expect(rows.length).toBe(20)
  })

  test('the breakdowns: every list of stats.json in order; a referrer made to be a formula is neutralised', async () => {
    const res = await box.request(`/${code}+.csv?table=breakdowns&from=2026-06-01&to=2026-06-19`)
    expect(res.headers.get('content-disposition')).toBe(
      'attachment; filename="linkbox-sales-2026-breakdowns-2026-06-01-to-2026-06-19.csv"',
    )
    const text = await res.text()
    const rows = parseCsv(text)
    const s = await statsJson(code, '2026-06-01', '2026-06-19')
    const neutral = (name: string) => (/^[=+\-@]/.test(name) ? `'${name}` : name)
    expect(rows).toEqual([
      ['breakdown', 'name', 'clicks'],
      ...(['sources', 'devices', 'browsers', 'os', 'countries'] as const).flatMap((list) =>
        s[list].map((r: any) => [
          { sources: 'source', devices: 'device', browsers: 'browser', os: 'os', countries: 'country' }[list],
          neutral(r.name),
          String(r.clicks),
        ]),
      ),
    ])
    expect(rows).toContainEqual(['country', 'unknown', String(s.countries[0].clicks)]) // the test's loopback peer is nowhere
    // The formula referrer: its host is stored as is, and leaves only as text.
    expect(s.sources).toContainEqual({ name: '=hyperlink("x")', clicks: 4 })
    expect(rows).toContainEqual(['source', `'=hyperlink("x")`, '4'])
    expect(text).toContain(`source,"'=hyperlink(""x"")",4\r\n`)
    expect(text).not.toMatch(/(^|,)=/m)
  })

  test('no table named: the days; a window of the default period without dates', async () => {
    const res = await box.request(`/${code}+.csv`)
    expect(res.headers.get('content-disposition')).toBe(
      'attachment; filename="linkbox-sales-2026-days-2026-05-22-to-2026-06-20.csv"',
    )
    expect(parseCsv(await res.text()).length).toBe(31)
  })

  test('a password-protected link: the public CSV has its numbers but never its destination; unknown codes are 404', async () => {
    for (const table of ['days', 'breakdowns']) {
      const res = await box.request(`/${locked}+.csv?table=${table}`)
      expect(res.status).toBe(200)
      expect(await res.text()).not.toContain('secret.example')
    }
    const page = await (await box.request(`/${locked}+`)).text()
    expect(page).toContain('The destination is hidden: the link is password-protected.')
    expect(page).not.toContain('secret.example')
    expect((await box.request('/no-such-code+.csv')).status).toBe(404)
    expect((await box.request('/%22x%22+.csv')).status).toBe(404)
  })
})

describe("the dashboard's statistics page", () => {
  test('the owner: the same numbers for the same dates, with the destination of a protected link', async () => {
    const res = await box.request(`/dashboard/links/${code}/stats?from=2026-06-02&to=2026-06-10`, {
      headers: { cookie: alice.cookie },
    })
    expect(res.status).toBe(200)
    const html = await res.text()
    const s = await statsJson(code, '2026-06-02', '2026-06-10')
    expect(html).toContain('<span class="label">Clicks in these days</span><span class="value">7</span>')
    expect(
      [...html.matchAll(/<title>(\d{4}-\d{2}-\d{2}): (\d+) clicks?, (\d+) visitors?<\/title>/g)].map((m) => ({
        date: m[1],
        clicks: Number(m[2]),
        visitors: Number(m[3]),
      })),
    ).toEqual(s.days)
    expect(html).toContain(
      `href="/dashboard/links/${code}/stats.csv?table=breakdowns&amp;from=2026-06-02&amp;to=2026-06-10"`,
    )
    const mine = await (
      await box.request(`/dashboard/links/${locked}/stats`, { headers: { cookie: alice.cookie } })
    ).text()
    expect(mine.replaceAll('<wbr>', '')).toContain('https://secret.example/only-for-owner')
    // The list links each row's statistics here.
    expect(await (await box.request('/dashboard', { headers: { cookie: alice.cookie } })).text()).toContain(
      `href="/dashboard/links/${code}/stats"`,
    )
  })

  test("its CSV: the owner's, never cached; refused without a session (to sign in) and for another account (404)", async () => {
    const own = await box.request(`/dashboard/links/${locked}/stats.csv?table=days`, {
      headers: { cookie: alice.cookie },
    })
    expect(own.status).toBe(200)
    expect(own.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(own.headers.get('cache-control')).toBe('no-store')
    expect(own.headers.get('content-disposition')).toMatch(
      /^attachment; filename="linkbox-locked-one-days-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}\.csv"$/,
    )

    const anon = await box.request(`/dashboard/links/${locked}/stats.csv?table=days`)
    expect(anon.status).toBe(303)
    expect(anon.headers.get('location')).toStartWith('/login?next=')
    expect(await anon.text()).toBe('')
    const other = await box.request(`/dashboard/links/${locked}/stats.csv?table=days`, {
      headers: { cookie: bob.cookie },
    })
    expect(other.status).toBe(404)
    expect(other.headers.get('content-type')).toContain('text/html')
    expect(await other.text()).not.toContain('secret.example')
    const otherPage = await box.request(`/dashboard/links/${locked}/stats`, { headers: { cookie: bob.cookie } })
    expect(otherPage.status).toBe(404)
  })

  test('refused dates on the dashboard: 400 with the message; the CSV too', async () => {
    const res = await box.request(`/dashboard/links/${code}/stats?from=2026-06-10&to=2026-06-01`, {
      headers: { cookie: alice.cookie },
    })
    expect(res.status).toBe(400)
    expect(await res.text()).toContain('The start date (from) is invalid: a date on or before &quot;to&quot;.')
    const csv = await box.request(`/dashboard/links/${code}/stats.csv?from=2026-06-10&to=2026-06-01`, {
      headers: { cookie: alice.cookie },
    })
    expect(csv.status).toBe(400)
    expect(await csv.text()).toContain('The start date (from) is invalid')
  })
})
