// `linkbox doctor`: checks config, data directory, database, ports and helper programs (doctor.ts). A config
// that does not load is a failing check like any other, not a stop.
import { loadConfig, type Config } from '../kernel/config'
import { ConfigError } from '../kernel/errors'
import type { Invocation } from './args'

export async function run({ configPath, overrides }: Invocation): Promise<number> {
  const { configFailure, formatFindings, runDoctor } = await import('../app/doctor')
  let config: Config
  try {
    config = loadConfig(configPath, overrides)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    console.log(formatFindings(await configFailure(configPath ?? '', err.message)))
    return 1
  }
  const findings = await runDoctor(config, configPath ?? 'no file: the defaults')
  console.log(formatFindings(findings))
  return findings.some((f) => f.verdict === 'FAIL') ? 1 : 0
}
