// `linkbox account …`: the account service, as the actor "cli" (every change is in the audit log).
import { ConfigError } from '../kernel/errors'
import type { Invocation } from './args'
import { context, readStdin } from './context'

export async function run(invocation: Invocation): Promise<number> {
  const cx = context(invocation)
  const { config, sub, arg, arg2, values } = cx
  const usage =
    'usage: linkbox account create NAME [--admin] [--password PASS|-] | account list | account disable|enable NAME | account delete NAME [--with-links] | account password NAME --password PASS|-'
  if (arg2 !== undefined || !(sub === 'list' ? arg === undefined : arg)) throw new ConfigError(usage)
  if (values.admin && sub !== 'create') throw new ConfigError(`--admin is for account create; ${usage}`)
  if (values['with-links'] && sub !== 'delete') throw new ConfigError(`--with-links is for account delete; ${usage}`)
  if (values.password !== undefined && sub !== 'create' && sub !== 'password')
    throw new ConfigError(`--password is for account create and account password; ${usage}`)
  if (sub === 'password' && values.password === undefined && !process.stdin.isTTY)
    throw new ConfigError(
      'usage: linkbox account password NAME --password PASS|- (- reads it from stdin; at a terminal it is asked for)',
    )
  if (sub === 'delete' && values['with-links']) {
    // The service keeps visited links in memory and would go on redirecting the deleted ones.
    const { runningService } = await import('../app/lock')
    const running = await runningService(config)
    if (running)
      throw new ConfigError(
        `account delete --with-links: ${running}, which keeps visited links in memory; delete the account from the dashboard (Admin), or stop the service first`,
      )
  }
  let password = values.password === '-' ? await readStdin() : values.password
  const [{ printable }, { CLI }] = await Promise.all([import('../accounts'), import('../audit')])
  const accounts = await (await cx.open()).accounts()
  try {
    // account create at a terminal asks for the dashboard password (not under oidc.only: nobody signs in with one).
    const asks = sub === 'create' && password === undefined && !config.oidc.only
    const ask = (asks || (sub === 'password' && password === undefined)) && process.stdin.isTTY
    // A name taken (create) or not there (password) gets its error below at once, not after the question.
    if (ask && (sub === 'create') === !(await accounts.accountByName(arg!))) {
      const { askNewPassword, PasswordNotSet } = await import('./prompt')
      try {
        password = (await askNewPassword(arg!, sub === 'create')) || undefined
      } catch (err) {
        if (!(err instanceof PasswordNotSet)) throw err
        throw new ConfigError(
          `no password after three tries; nothing was ${sub === 'create' ? 'made' : 'changed'}. ${setLater(arg!)}`,
        )
      }
    }
    switch (sub) {
      case 'create': {
        const { account, key } = await accounts.createAccount({ name: arg!, admin: !!values.admin, password }, CLI)
        // On stderr: stdout ends with the key alone on its line, for scripts.
        if (asks && password === undefined)
          console.error(`account ${account.name} has no dashboard password yet. ${setLater(account.name)}`)
        console.log(`account ${account.name} created${account.admin ? ' (admin)' : ''}; its API key (shown once):`)
        console.log(key.key)
        return 0
      }
      case 'list': {
        const fmt = (ms: number | null) => (ms ? new Date(ms).toISOString().slice(0, 19) + 'Z' : '-')
        console.log(['id', 'name', 'role', 'state', 'created', 'last sign-in', 'links', 'keys', 'mailboxes'].join('\t'))
        for (let page = 1, pages = 1; page <= pages; page++) {
          const list = await accounts.listAccounts({ page })
          pages = list.pages
          for (const a of list.accounts)
            console.log(
              [
                a.id,
                printable(a.name),
                a.admin ? 'admin' : 'user',
                a.disabled === null ? 'active' : `disabled ${fmt(a.disabled)}`,
                fmt(a.created),
                fmt(a.lastSignin),
                a.links,
                a.keys,
                a.mailboxes,
              ].join('\t'),
            )
        }
        return 0
      }
      case 'disable':
      case 'enable': {
        const done = await accounts.setDisabled(arg!, sub === 'disable', CLI)
        console.log(
          sub === 'disable'
            ? `account ${done.name} disabled: its API keys are refused and its sessions ended`
            : `account ${done.name} enabled`,
        )
        return 0
      }
      case 'delete': {
        const done = await accounts.deleteAccount(arg!, { withLinks: !!values['with-links'] }, CLI)
        const links = `${done.links} link${done.links === 1 ? '' : 's'}`
        console.log(
          `account ${done.name} deleted with its keys, mailboxes and webhooks; ${values['with-links'] ? `its ${links} deleted too` : `its ${links} kept, owned by nobody`}`,
        )
        return 0
      }
      case 'password': {
        const done = await accounts.setPassword(arg!, password ?? '', CLI)
        console.log(
          `account ${done.name} has a new dashboard password; ${done.sessionsEnded} session${done.sessionsEnded === 1 ? '' : 's'} ended`,
        )
        return 0
      }
      default:
        throw new ConfigError(usage)
    }
  } finally {
    await cx.close()
  }
}

/** How to give an account its dashboard password afterwards. */
const setLater = (name: string) =>
  `To sign in to the dashboard, set one with: linkbox account password ${/^[\w.@-]+$/.test(name) ? name : 'NAME'} (at a terminal; elsewhere add --password - and give it on stdin)`
