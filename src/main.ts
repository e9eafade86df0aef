#!/usr/bin/env bun
// The command line: argv → one module of cli/ per command, imported only when it runs. The HTTP app alone
// (Elysia, the QR encoder) takes tens of milliseconds to load, which `linkbox version`, `key list` or a
// script's `account create` should not pay. Every change a command makes is audited as the actor "cli".
import { AppError, ConfigError } from './kernel/errors'
import { VERSION } from './kernel/version'
import type { Invocation } from './cli/args'

type Command = { run(invocation: Invocation): Promise<number> }
const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: () => import('./cli/serve'),
  account: () => import('./cli/account'),
  key: () => import('./cli/key'),
  audit: () => import('./cli/audit'),
  webhook: () => import('./cli/webhook'),
  import: () => import('./cli/import'),
  doctor: () => import('./cli/doctor'),
  backup: () => import('./cli/backup'),
  restore: () => import('./cli/restore'),
  migrate: () => import('./cli/migrate'),
  ytdlp: () => import('./cli/ytdlp'),
  media: () => import('./cli/media'),
  version: () => import('./cli/version'),
}

export async function main(argv: string[]): Promise<number> {
  // Before anything else loads: node:util and node:net (config checks addresses) alone cost ~10 ms.
  if (argv.length === 1 && argv[0] === 'version') {
    console.log(VERSION)
    return 0
  }
  const [{ parseCommandLine }, help] = await Promise.all([import('./cli/args'), import('./cli/help')])
  const { COMMAND_HELP, USAGE } = help
  const invocation = parseCommandLine(argv)
  const { command, sub, values } = invocation
  // `linkbox help key` and `linkbox key --help` (any subcommand: `linkbox key create -h`) say the same.
  const helpFor = command === 'help' ? sub : values.help ? command : undefined
  if (helpFor !== undefined) {
    if (!Object.hasOwn(COMMAND_HELP, helpFor)) throw new ConfigError(`unknown command "${helpFor}"\n\n${USAGE}`)
    console.log(COMMAND_HELP[helpFor])
    return 0
  }
  if (values.help || !command || command === 'help') {
    console.log(USAGE)
    return command || values.help ? 0 : 2
  }
  if (!Object.hasOwn(COMMANDS, command)) {
    // The config is loaded first, as for every command: its error comes before this one.
    ;(await import('./kernel/config')).loadConfig(invocation.configPath)
    throw new ConfigError(`unknown command "${command}"\n\n${USAGE}`)
  }
  return (await COMMANDS[command]!()).run(invocation)
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exit(code) // serve answers -1: it keeps running
    },
    async (err) => {
      const { DatabaseError } = await import('./db/sqlite')
      const parseError = (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
      if (err instanceof ConfigError || err instanceof AppError || parseError) {
        console.error(`linkbox: ${(err as Error).message}`)
        process.exit(2)
      }
      // The database is unusable (not a database, cannot be opened) or a backup cannot be written: the
      // message names the file; a stack trace would not help the operator.
      if (err instanceof DatabaseError || (err as Error)?.name === 'Refusal') {
        console.error(`linkbox: ${err.message}`)
        process.exit(1)
      }
      console.error(err)
      process.exit(1)
    },
  )
}
