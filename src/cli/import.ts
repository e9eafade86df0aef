// `linkbox import FILE --account NAME [--format F]`: the same import as POST /api/import.json, into that account,
// through the whole app (its link service, blocklists and webhook events).
import { readFileSync, statSync } from 'node:fs'
import { SCOPES } from '../kernel/caller'
import { AppError, ConfigError } from '../kernel/errors'
import type { Invocation } from './args'
import { context } from './context'

export async function run(invocation: Invocation): Promise<number> {
  const cx = context(invocation)
  const { config, sub: file, arg, values } = cx
  if (!file || arg || !values.account) throw new ConfigError('usage: linkbox import FILE --account NAME [--format F]')
  const accountName = values.account
  const format = values.format ?? 'csv'
  const [{ IMPORT_FORMATS, MAX_IMPORT_BYTES, importLinks, recognisedFormat }, { printable }] = await Promise.all([
    import('../links'),
    import('../accounts'),
  ])
  if (format !== 'auto' && !(IMPORT_FORMATS as readonly string[]).includes(format))
    throw new ConfigError(`--format must be one of: ${IMPORT_FORMATS.join(', ')}, auto`)
  let size: number
  try {
    size = statSync(file).size
  } catch (err) {
    console.error(
      `linkbox: import refused: ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    )
    return 1
  }
  if (size > MAX_IMPORT_BYTES) {
    console.error(
      `linkbox: import refused: ${file} is ${size} bytes, over the limit of ${MAX_IMPORT_BYTES} (10 MiB) for "file"`,
    )
    return 1
  }
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(file))
  } catch {
    console.error(`linkbox: import refused: ${file} is not UTF-8 text`)
    return 1
  }
  const box = await cx.linkbox()
  try {
    const account = await box.accounts.accountByName(accountName)
    if (!account) throw new ConfigError(`no account "${accountName}" (linkbox account create makes one)`)
    if (account.disabled !== null) throw new ConfigError(`the account "${accountName}" is disabled`)
    // The same checks as a link made through the API, blocklists included.
    if (config.links.blocklist_files.length) await box.abuse.reloadBlocklist()
    const caller = {
      accountId: account.id,
      accountName,
      admin: account.admin === 1,
      scopes: new Set(SCOPES),
      keyId: null,
      via: 'dashboard' as const,
    }
    let result
    try {
      const chosen = format === 'auto' ? recognisedFormat(text) : (format as (typeof IMPORT_FORMATS)[number])
      result = await importLinks(box.links, caller, text, chosen, { maxRows: config.links.import_max_rows })
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err
      console.error(`linkbox: import refused: ${err.message}`)
      return 1
    }
    console.log(`created ${result.created} links for ${accountName}; skipped ${result.skipped_total}`)
    if (result.without_password)
      console.log(`${result.without_password} of them had a password, which an export never holds: set it again`)
    for (const s of result.skipped) console.log([s.line, printable(s.code), s.reason, printable(s.message)].join('\t'))
    if (result.skipped_total > result.skipped.length)
      console.log(`… and ${result.skipped_total - result.skipped.length} more skipped`)
    return 0
  } finally {
    await box.close()
  }
}
