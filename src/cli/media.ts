// `linkbox media cookies add SITE FILE|- | list [--json] | remove SITE`: cookies per site for media download
// (media/cookies.ts), stored sealed; the running service uses a site's from its next run, no restart.
import { statSync } from 'node:fs'
import { ConfigError } from '../kernel/errors'
import type { Invocation } from './args'
import { context } from './context'

const USAGE = 'usage: linkbox media cookies add SITE FILE|- | media cookies list [--json] | media cookies remove SITE'
const MAX_BYTES = 1024 * 1024
const time = (ms: number | null) => (ms === null ? '-' : `${new Date(ms).toISOString().slice(0, 19)}Z`)

/** The file's text, or a refusal naming it (read whole only when it is within the limit). */
async function readCookiesFile(file: string): Promise<string> {
  if (file === '-') return Bun.stdin.text()
  let size: number
  try {
    const st = statSync(file)
    if (!st.isFile()) throw Object.assign(new Error('not a file'), { code: 'not a file' })
    size = st.size
  } catch (err) {
    throw new ConfigError(
      `FILE: ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    )
  }
  if (size > MAX_BYTES) throw new ConfigError(`FILE: ${file} is ${size} bytes, over the limit of 1 MiB`)
  return Bun.file(file).text()
}

export async function run(invocation: Invocation): Promise<number> {
  const cx = context(invocation)
  const { sub, arg: action, arg2: site, arg3: file, values } = cx
  const shape =
    sub === 'cookies' &&
    ((action === 'add' && site && file) || (action === 'list' && !site) || (action === 'remove' && site && !file))
  if (!shape) throw new ConfigError(USAGE)
  const [{ CookiesError }, { CLI }] = await Promise.all([import('../media'), import('../audit')])
  // The file is read before the database opens: a wrong path costs nothing.
  const text = action === 'add' ? await readCookiesFile(file!) : ''
  const jar = await (await cx.open()).cookies()
  try {
    if (action === 'add') {
      const added = await jar.add(site!, text, CLI)
      const left = [
        added.otherSites ? `${added.otherSites} for other domains` : '',
        added.expired ? `${added.expired} expired` : '',
      ].filter(Boolean)
      console.log(
        `cookies for ${added.site}: ${added.cookies} kept${left.length ? ` (left out: ${left.join(', ')})` : ''}; earliest expiry ${added.expires === null ? 'none (session cookies only)' : time(added.expires)}`,
      )
    } else if (action === 'list') {
      const rows = await jar.list()
      if (values.json) console.log(JSON.stringify(rows))
      else {
        console.log(['site', 'cookies', 'earliest expiry', 'last used', 'added'].join('\t'))
        for (const r of rows)
          console.log([r.site, r.cookies, time(r.expires), time(r.last_used), time(r.created)].join('\t'))
      }
    } else {
      if (!(await jar.remove(site!, CLI))) {
        console.error(`linkbox: media cookies remove refused: no cookies are stored for the site "${site}"`)
        return 1
      }
      console.log(`cookies for ${site} removed`)
    }
  } catch (err) {
    if (!(err instanceof CookiesError)) throw err
    // The message names the site or the line of the file.
    console.error(`linkbox: media cookies ${action} refused: ${err.message}`)
    return 1
  } finally {
    await cx.close()
  }
  return 0
}
