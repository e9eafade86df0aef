// A real OpenID provider in the test process: oidc-provider (the certified Node implementation) served by
// node:http on 127.0.0.1, port 0, so its issuer is http://127.0.0.1:<port> (linkbox accepts http on loopback
// only). One confidential client, PKCE required. Its sign-in and consent pages are the minimal ones below:
// plain HTML forms, a name to sign in with (no password: the test users are known by name), a Continue
// button and a Cancel link (which answers the client with error=access_denied). Users can be changed while
// it runs (take someone out of a group) and their claims follow at the next sign-in.
import { generateKeyPairSync } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createServer as createNetServer } from 'node:net'
import Provider from 'oidc-provider'
import type { AppOptions } from '../../src/app/app'
import { createLogger } from '../../src/kernel/log'
import { startApp, type RunningApp } from './browser'

export interface TestUser {
  /** The provider's stable subject: not the name, so that tests see linkbox link accounts by `sub`. */
  sub: string
  preferred_username: string
  email?: string
  groups: string[]
}

export interface TestProvider {
  issuer: string
  clientId: string
  clientSecret: string
  users: Map<string, TestUser>
  /** Requests the provider answered, by path (the token endpoint's count tells a code was redeemed). */
  hits: Map<string, number>
  /** While true, every request is answered 503 (a provider that is down). */
  down: boolean
  /**
   * While true, the provider's key set (jwks_uri) publishes another key under the same kid: the ID tokens it
   * signs no longer verify against the keys it shows (what a forged token looks like to the client).
   */
  wrongKeys: boolean
  stop(): Promise<void>
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const page = (title: string, body: string) => `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)}</title></head>
<body><main><h1>${escape(title)}</h1>${body}</main></body></html>`

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
}

/**
 * Starts the provider. `redirectUri` is linkbox's callback, `postLogoutUri` where the provider's sign-out
 * may send the browser back to (linkbox's base URL).
 */
export async function startProvider(opts: {
  redirectUri: string
  postLogoutUri: string
  users?: TestUser[]
}): Promise<TestProvider> {
  const users = new Map<string, TestUser>()
  for (const u of opts.users ?? [
    {
      sub: 'sub-alice-7f3a',
      preferred_username: 'alice',
      email: 'alice@example.test',
      groups: ['linkbox-admins', 'staff'],
    },
    { sub: 'sub-bob-19c2', preferred_username: 'bob', email: 'bob@example.test', groups: ['staff'] },
  ])
    users.set(u.sub, u)
  // Its own signing key (kid known), and another one published in its place when wrongKeys is set.
  const kid = 'test-signing-key'
  const signing = {
    ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
    kid,
    use: 'sig',
    alg: 'RS256',
  }
  const { n, e } = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' })
  const impostor = { kty: 'RSA', n, e, kid, use: 'sig', alg: 'RS256' }
  const clientId = 'linkbox-test'
  const clientSecret = 'test-client-secret-3b1f9c0e7d'
  const hits = new Map<string, number>()

  // The issuer's port is only known once listening: listen first, make the provider, then route to it.
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!
    hits.set(path, (hits.get(path) ?? 0) + 1)
    if (result.wrongKeys && path === '/jwks')
      return void res
        .writeHead(200, { 'content-type': 'application/jwk-set+json' })
        .end(JSON.stringify({ keys: [impostor] }))
    handler && !result.down ? handler(req, res) : res.writeHead(503).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [opts.redirectUri],
        post_logout_redirect_uris: [opts.postLogoutUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    scopes: ['openid', 'profile', 'email', 'groups'],
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name'],
      email: ['email', 'email_verified'],
      groups: ['groups'],
    },
    // The claims come from the user as it is now: a change to `users` shows at the next sign-in.
    async findAccount(_ctx: unknown, sub: string) {
      if (!users.has(sub)) return undefined
      return {
        accountId: sub,
        async claims() {
          const u = users.get(sub)!
          return {
            sub,
            preferred_username: u.preferred_username,
            name: u.preferred_username,
            email: u.email,
            email_verified: true,
            groups: [...u.groups],
          }
        },
      }
    },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: {
        enabled: true,
        async logoutSource(ctx: any, form: string) {
          ctx.type = 'html'
          ctx.body = page(
            'Test provider: sign out',
            `${form}<button type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>`,
          )
        },
      },
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['test-provider-cookie-key-5d2e8a'] },
    jwks: { keys: [signing] },
    // Quiet: its own rendering of errors, without the debugging dump.
    async renderError(ctx: any, out: Record<string, string>) {
      ctx.type = 'html'
      ctx.body = page('Provider error', `<p>${escape(out.error ?? '')}: ${escape(out.error_description ?? '')}</p>`)
    },
  } as any)
  provider.on('server_error', () => {})

  const callback = provider.callback()
  handler = (req, res) => {
    const m = (req.url ?? '').match(/^\/interaction\/([A-Za-z0-9_-]+)(\/(login|consent|abort))?$/)
    if (!m) return void callback(req, res)
    interaction(req, res, m[3] ?? null).catch((err) => {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err?.message ?? err))
    })
  }

  async function interaction(req: IncomingMessage, res: ServerResponse, step: string | null) {
    const details = await provider.interactionDetails(req, res)
    const { uid, prompt, params } = details
    const html = (body: string, status = 200) =>
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(body)
    if (step === 'abort') {
      return provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The user cancelled' },
        { mergeWithLastSubmission: false },
      )
    }
    if (step === null && req.method === 'GET') {
      const cancel = `<p><a href="/interaction/${uid}/abort">Cancel</a></p>`
      if (prompt.name === 'login')
        return html(
          page(
            'Test provider: sign in',
            `<form method="post" action="/interaction/${uid}/login">
<label for="login">User name</label> <input id="login" name="login" autofocus>
<button type="submit">Sign in</button></form>${cancel}`,
          ),
        )
      return html(
        page(
          'Test provider: allow access',
          `<p>${escape(String(params.client_id))} asks for: ${escape(String(params.scope))}</p>
<form method="post" action="/interaction/${uid}/consent"><button type="submit">Continue</button></form>${cancel}`,
        ),
      )
    }
    if (step === 'login' && req.method === 'POST') {
      const name = (await readForm(req)).get('login') ?? ''
      const user = [...users.values()].find((u) => u.preferred_username === name)
      if (!user) return html(page('Test provider: sign in', `<p>No user ${escape(name)}.</p>`), 400)
      return provider.interactionFinished(
        req,
        res,
        { login: { accountId: user.sub } },
        { mergeWithLastSubmission: false },
      )
    }
    if (step === 'consent' && req.method === 'POST') {
      const d = prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] }
      const grant = details.grantId
        ? (await provider.Grant.find(details.grantId))!
        : new provider.Grant({ accountId: details.session!.accountId, clientId: String(params.client_id) })
      if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '))
      if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims)
      const grantId = await grant.save()
      return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true })
    }
    html(page('Not here', ''), 404)
  }

  const result: TestProvider = {
    issuer,
    clientId,
    clientSecret,
    users,
    hits,
    down: false,
    wrongKeys: false,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
  return result
}

/** Cookies of one origin, as a browser keeps them (name → value; a Max-Age=0 one is removed). */
export class Jar {
  private cookies = new Map<string, string>()
  header = () => [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  take(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq).trim()
      if (/;\s*Max-Age=0\b/i.test(c)) this.cookies.delete(name)
      else this.cookies.set(name, pair!.slice(eq + 1))
    }
    return res
  }
  get = (name: string) => this.cookies.get(name)
  set = (name: string, value: string) => void this.cookies.set(name, value)
  delete = (name: string) => void this.cookies.delete(name)
}

/** fetch without following redirects, with (and into) a jar. */
export async function visit(jar: Jar, url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  if (jar.header()) headers.set('cookie', jar.header())
  return jar.take(await fetch(url, { ...init, headers, redirect: 'manual' }))
}

/**
 * A person signing in as `user` through the provider's pages over HTTP, as a browser does: linkbox's
 * "Sign in with" link, the provider's sign-in page (skipped when the provider remembers them) and its
 * consent page (skipped when given before), up to the callback URL the provider sends back to linkbox,
 * which is returned unvisited with the two jars. `cancel`: the person cancels at the provider.
 */
export async function throughProvider(
  appUrl: string,
  provider: TestProvider,
  user: string,
  opts: { app?: Jar; idp?: Jar; cancel?: boolean } = {},
) {
  const app = opts.app ?? new Jar()
  const idp = opts.idp ?? new Jar()
  let res = await visit(app, `${appUrl}/login/oidc?next=%2Fdashboard`)
  if (res.status !== 303) throw new Error(`/login/oidc answered ${res.status}`)
  let location = res.headers.get('location')!
  for (let step = 0; step < 12; step++) {
    if (location.startsWith(appUrl)) return { callback: location, app, idp }
    const url = new URL(location, provider.issuer).href
    res = await visit(idp, url)
    if (res.status === 303 || res.status === 302) {
      location = res.headers.get('location')!
      continue
    }
    const html = await res.text()
    const uid = url.match(/\/interaction\/([^/?]+)/)?.[1]
    if (!uid) throw new Error(`unexpected provider page ${url}: ${res.status} ${html.slice(0, 200)}`)
    if (opts.cancel) res = await visit(idp, `${provider.issuer}/interaction/${uid}/abort`)
    else {
      const action = html.match(/action="([^"]+)"/)![1]!
      const body = action.endsWith('/login') ? `login=${encodeURIComponent(user)}` : ''
      res = await visit(idp, `${provider.issuer}${action}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      })
    }
    location = res.headers.get('location')!
  }
  throw new Error('the provider did not send the browser back')
}

/** A port free now (linkbox's base URL must be known before it listens: the provider holds the redirect URI). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createNetServer()
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

/** A log of the test's own, keeping every warn/error line whole (the message and its fields). */
export function capturedLines() {
  const lines: Record<string, unknown>[] = []
  const logger = createLogger({
    format: 'json',
    tty: false,
    requests: false,
    write: (text, level) => {
      if (level === 'warn' || level === 'error') for (const l of text.split('\n')) if (l) lines.push(JSON.parse(l))
    },
  })
  return {
    logger,
    lines,
    get errors() {
      return lines.map((l) => l.msg)
    },
  }
}

/**
 * The provider and a linkbox using it (named "Test IdP", admin group linkbox-admins), both on 127.0.0.1.
 * `oidc` and `extra` are merged over that config.
 */
export async function startWithProvider(
  oidc: Record<string, unknown> = {},
  opts: AppOptions = {},
  extra: Record<string, unknown> = {},
): Promise<{ provider: TestProvider; app: RunningApp; appUrl: string }> {
  const port = await freePort()
  const appUrl = `http://127.0.0.1:${port}`
  const provider = await startProvider({ redirectUri: `${appUrl}/login/oidc/callback`, postLogoutUri: `${appUrl}/` })
  const app = startApp(
    {
      server: { host: '127.0.0.1', port, base_url: appUrl },
      oidc: {
        issuer: provider.issuer,
        client_id: provider.clientId,
        client_secret: provider.clientSecret,
        admin_groups: ['linkbox-admins'],
        name: 'Test IdP',
        ...oidc,
      },
      ...extra,
    },
    { logger: capturedLines().logger, ...opts },
  )
  return { provider, app, appUrl }
}
