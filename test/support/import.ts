// The import API as the import tests call it: a file of test/fixtures/import, POSTed as a form to
// /api/import.json with an API key, and the account's links exported as linkbox's CSV.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readAnswer, type TestBox } from './app'

/** A file of test/fixtures/import, as text. */
export const importFixture = (name: string) =>
  readFileSync(join(import.meta.dir, '..', 'fixtures', 'import', name), 'utf8')

const as = (key: string) => ({ 'x-api-key': key })

/** POST /api/import.json with `text` as the form's file (links.csv) and its format field; the answer read. */
export async function importFile(b: TestBox, key: string, text: string, format = 'csv') {
  const form = new FormData()
  form.set('file', new Blob([text], { type: 'text/csv' }), 'links.csv')
  form.set('format', format)
  return readAnswer(await b.request('/api/import.json', { method: 'POST', headers: as(key), body: form }))
}

/** The key's links as linkbox's CSV export. */
export const exportCsv = async (b: TestBox, key: string) =>
  (await b.request('/api/links.json?format=csv', { method: 'POST', headers: as(key) })).text()
