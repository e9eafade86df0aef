// `linkbox key create|list|revoke`: API keys through the account service, as the actor "cli".
import { ConfigError } from '../kernel/errors'
import type { Invocation } from './args'
import { context } from './context'

export async function run(invocation: Invocation): Promise<number> {
  const cx = context(invocation)
  const { sub, arg, values } = cx
  const [{ parseScopes, printable }, { CLI }] = await Promise.all([import('../accounts'), import('../audit')])
  const accounts = await (await cx.open()).accounts()
  try {
    if (sub === 'create' && arg) {
      const key = await accounts.createKey(
        { account: arg, scopes: parseScopes(values.scopes), label: values.label },
        CLI,
      )
      console.log(`key ${key.id} for ${arg} with scopes ${key.scopes.join(',')} (shown once):`)
      console.log(key.key)
    } else if (sub === 'list') {
      const rows = await accounts.listKeys({ account: arg })
      const fmt = (ms: number | null) => (ms ? new Date(ms).toISOString().slice(0, 19) + 'Z' : '-')
      console.log(['id', 'prefix', 'account', 'scopes', 'created', 'last used', 'revoked', 'label'].join('\t'))
      // Labels stored before they were checked may hold tabs or newlines: escaped, they cannot forge lines.
      for (const r of rows)
        console.log(
          [
            r.id,
            r.prefix,
            printable(r.account),
            r.scopes.join(','),
            fmt(r.created),
            fmt(r.last_used),
            fmt(r.revoked),
            printable(r.label),
          ].join('\t'),
        )
    } else if (sub === 'revoke' && arg) {
      await accounts.revokeKey(arg, CLI)
      console.log(`key ${arg} revoked`)
    } else throw new ConfigError('usage: linkbox key create ACCOUNT | key list [ACCOUNT] | key revoke ID|PREFIX')
  } finally {
    await cx.close()
  }
  return 0
}
