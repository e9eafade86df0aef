// argv → the command, its positionals and options (node:util's parseArgs), with parse errors in plain words.
import { parseArgs } from 'node:util'
import type { ConfigOverrides } from '../kernel/config'
import { ConfigError } from '../kernel/errors'
import { COMMAND_HELP, OPTION_VALUES } from './help'

const options = {
  config: { type: 'string', short: 'c' },
  admin: { type: 'boolean' },
  password: { type: 'string' },
  scopes: { type: 'string' },
  label: { type: 'string' },
  from: { type: 'string' },
  events: { type: 'string' },
  account: { type: 'string' },
  format: { type: 'string' },
  force: { type: 'boolean' },
  'with-links': { type: 'boolean' },
  since: { type: 'string' },
  json: { type: 'boolean' },
  to: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  port: { type: 'string', short: 'p' },
  host: { type: 'string' },
  'smtp-port': { type: 'string' },
  data: { type: 'string' },
} as const

const parse = (argv: string[]) => parseArgs({ args: argv, allowPositionals: true, strict: true, options })

export type Values = ReturnType<typeof parse>['values']

/** One command line, parsed: what every command module is given. */
export interface Invocation {
  command: string | undefined
  sub: string | undefined
  arg: string | undefined
  arg2: string | undefined
  /** The fifth word (`linkbox media cookies add SITE FILE`). */
  arg3: string | undefined
  values: Values
  /** --config, else LINKBOX_CONFIG; undefined: the built-in defaults. */
  configPath: string | undefined
  /** --port, --host (serve and doctor) and --data (every command), over the config file's values. */
  overrides: ConfigOverrides
}

export function parseCommandLine(argv: string[]): Invocation {
  let parsed: ReturnType<typeof parse>
  try {
    parsed = parse(argv)
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw argumentError(err as Error, argv)
    throw err
  }
  const { values, positionals } = parsed
  const [command, sub, arg, arg2, arg3] = positionals
  return {
    command,
    sub,
    arg,
    arg2,
    arg3,
    values,
    configPath: values.config ?? process.env.LINKBOX_CONFIG,
    overrides: overridesOf(values, command),
  }
}

/** --port, --host, --smtp-port and --data, checked here so that their errors name the option, not a config key. */
function overridesOf(values: Values, command: string | undefined): ConfigOverrides {
  const out: ConfigOverrides = {}
  const listens = command === 'serve' || command === 'doctor'
  for (const name of ['port', 'host', 'smtp-port'] as const)
    if (values[name] !== undefined && !listens && !values.help)
      throw new ConfigError(`--${name} is for serve and doctor; linkbox --help lists the commands`)
  if (values.port !== undefined) {
    if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535)
      throw new ConfigError('--port needs a port number from 0 to 65535; linkbox serve --help lists the options')
    out.port = Number(values.port)
  }
  const smtp = values['smtp-port']
  if (smtp !== undefined) {
    if (!/^\d{1,5}$/.test(smtp) || Number(smtp) > 65535)
      throw new ConfigError(
        '--smtp-port needs a port number from 0 (no SMTP) to 65535; linkbox serve --help lists the options',
      )
    out.smtp_port = Number(smtp)
  }
  if (values.host !== undefined) {
    if (!values.host.trim()) throw new ConfigError('--host needs an address or a name, such as 127.0.0.1 or ::')
    out.host = values.host.trim()
  }
  if (values.data !== undefined) {
    if (!values.data.trim()) throw new ConfigError('--data needs a directory')
    out.data_dir = values.data
  }
  return out
}

/**
 * node:util's parse errors in plain words: "--from needs a URL or a file", not "Option '--from <value>'
 * argument missing". Anything else keeps the parser's message.
 */
function argumentError(err: Error & { code?: string }, argv: string[]): ConfigError {
  const command = argv.find((a) => Object.hasOwn(COMMAND_HELP, a))
  const help = command ? `linkbox ${command} --help` : 'linkbox --help'
  const named = /'(?:-[a-z], )?(--?[a-z-]+)/i.exec(err.message)?.[1]
  const option = named?.replace(/^--/, '')
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && named)
    return new ConfigError(`unknown option ${named}; ${help} lists the options`)
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
    if (/does not take an argument/.test(err.message))
      return new ConfigError(`--${option} takes no value; ${help} lists the options`)
    const needs = Object.hasOwn(OPTION_VALUES, option) ? OPTION_VALUES[option] : undefined
    if (needs) {
      // "Ambiguous": the next word starts with a dash (another option, most likely).
      const dash = /ambiguous/.test(err.message) ? ` (one that starts with - is written --${option}=-…)` : ''
      return new ConfigError(`--${option} needs ${needs}${dash}; ${help} lists the options`)
    }
  }
  return new ConfigError(err.message)
}
