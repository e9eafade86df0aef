// `linkbox ytdlp update [--from URL|FILE]`: a newer yt-dlp into data_dir/bin (media/ytdlp.ts); the service
// switches to it at its next extraction.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../kernel/config'
import { ConfigError } from '../kernel/errors'
import { createYtdlp, updateYtdlp, YtdlpUpdateError } from '../media'
import type { Invocation } from './args'
import { context } from './context'

/**
 * Extracts the yt-dlp bundled into the binary into data_dir/bin when it is missing or another build's. A failure
 * (a full disk) costs media download only, so it is a warning; the service then uses one on PATH.
 */
export async function prepareYtdlp(config: Config, warn: (line: string) => void = console.error) {
  try {
    await createYtdlp({ ytdlpPath: config.media.ytdlp_path, dataDir: config.data_dir }).prepare()
  } catch (err) {
    warn(
      `linkbox: warning: the bundled yt-dlp could not be put into ${join(config.data_dir, 'bin')}: ${(err as Error).message}`,
    )
  }
}

export async function run(invocation: Invocation): Promise<number> {
  const { config, sub, arg, values } = context(invocation)
  if (sub !== 'update' || arg) throw new ConfigError('usage: linkbox ytdlp update [--from URL|FILE]')
  mkdirSync(config.data_dir, { recursive: true, mode: 0o700 })
  await prepareYtdlp(config)
  let installed: { version: string; path: string }
  try {
    installed = await updateYtdlp({ dataDir: config.data_dir, from: values.from, log: (line) => console.log(line) })
  } catch (err) {
    if (!(err instanceof YtdlpUpdateError)) throw err
    console.error(`linkbox: ytdlp update refused: ${err.message}; the yt-dlp in use is unchanged`)
    return 1
  }
  console.log(`yt-dlp ${installed.version} installed at ${installed.path}`)
  // Say what the service will actually run: a newer bundled one, or media.ytdlp_path, still wins.
  const used = await createYtdlp({ ytdlpPath: config.media.ytdlp_path, dataDir: config.data_dir }).current()
  if (used && used.source !== 'updated')
    console.log(
      `note: the service uses the ${used.source} one instead (${used.path}, ${used.version ?? 'version unknown'})`,
    )
  return 0
}
