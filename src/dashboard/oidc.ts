// "Sign in with <provider>" (SPEC §7): /login/oidc starts, /login/oidc/callback finishes with the same session
// as the password sign-in, /login/oidc/logout signs out at the provider; refusals go back to the sign-in page.
import { Elysia } from 'elysia'
import { rateKeyOf } from '../web/client-ip'
import { createProviderAccounts } from '../oidc'
import { createOidcClient, describe, SignInRefused, type PendingEntry, type PendingSignIns } from '../oidc'
import { escapeHtml } from '../web/render'
import type { DashboardDeps } from './deps'
import { cookiesOf, safeNext } from './page-helpers'

/** Sign-ins one client address may start a minute (each holds a pending entry until its callback). */
export const OIDC_STARTS_PER_CLIENT_PER_MINUTE = 30
const BINDING_COOKIE = 'lb_oidc'
const PATH = '/login/oidc'

export function createOidcSignIn(deps: DashboardDeps) {
  const { config, shell, sessions, limiter, clientIp, log } = deps
  const secure = config.server.base_url.startsWith('https:')
  // Started sign-ins in the database, sealed with the browser's binding (dashboard/flash.ts, the sign-ins' pool):
  // the callback may come back through another node (SPEC §11).
  const pending: PendingSignIns = {
    put: async (state, binding, entry, ttlMs) =>
      void (await shell.flash.put(`o${binding}`, 'oidc sign-in', entry, state, ttlMs)),
    take: async (state, binding) => {
      const t = await shell.flash.takeAny<PendingEntry>(`o${binding}`, 'oidc sign-in', state)
      return t && { entry: t.value, mine: t.mine, expired: t.expired }
    },
  }
  const client = createOidcClient({ oidc: config.oidc, baseUrl: config.server.base_url, clock: deps.clock, pending })
  const people = createProviderAccounts({
    storages: deps.storages,
    clock: deps.clock,
    issuer: config.oidc.issuer,
    adminGroups: config.oidc.admin_groups,
  })
  // SameSite=Lax: the callback is a top-level navigation from the provider's site, which Lax lets through.
  const bindingCookie = (value: string) =>
    `${BINDING_COOKIE}=${value}; Path=${PATH}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}; Max-Age=600`

  /** A sign-in that worked: the session, as the password sign-in makes it, with its audit row (signin.ok, method oidc). */
  async function signInSucceeded(
    request: Request,
    account: { accountId: number; name: string; admin: boolean; created: boolean },
    next: string,
  ): Promise<Response> {
    log.info('sign-in with the provider', {
      account: account.name,
      admin: account.admin,
      created: account.created,
      client: clientIp(request),
    })
    const { token } = await sessions.create(account.accountId, { address: clientIp(request), method: 'oidc' })
    const notice = account.created
      ? { kind: 'ok' as const, text: `Welcome, ${account.name}. Create an API key in the API section to use the API.` }
      : undefined
    return shell.seeOther(next, notice, { 'set-cookie': shell.sessionCookie(token) })
  }

  /**
   * A sign-in refused: the reason to the log and to the audit log (signin.failed), the sentence to the
   * sign-in page. Anyone can call the callback with made-up values, so the rows one address can add are
   * bounded as its starts are (OIDC_STARTS_PER_CLIENT_PER_MINUTE); past that, and for a start refused by
   * that limit, only the log line.
   */
  async function signInFailed(request: Request, reason: string, message: string, audited = true): Promise<Response> {
    const ip = clientIp(request)
    log.warn('sign-in with the provider refused', { reason, client: ip })
    if (audited && limiter.hit(`oidc-failed:${rateKeyOf(ip)}`, OIDC_STARTS_PER_CLIENT_PER_MINUTE).allowed)
      await sessions.failed(`(single sign-on with ${client.name})`, reason, ip)
    return shell.seeOther('/login', { kind: 'error', text: message })
  }

  const app = new Elysia({ name: 'dashboard-oidc' })
    .get(PATH, async ({ request }) => {
      const next = safeNext(new URL(request.url).searchParams.get('next'))
      if (await shell.session(request)) return shell.seeOther(next)
      const hit = limiter.hit(`oidc:${rateKeyOf(clientIp(request))}`, OIDC_STARTS_PER_CLIENT_PER_MINUTE)
      if (!hit.allowed)
        return signInFailed(
          request,
          'too many sign-ins started from this address',
          `Too many sign-ins started: wait ${hit.reset} s and try again.`,
          false,
        )
      try {
        const { url, binding } = await client.start({ next, binding: cookiesOf(request).get(BINDING_COOKIE) })
        return new Response(null, {
          status: 303,
          headers: { location: url, 'cache-control': 'no-store', 'set-cookie': bindingCookie(binding) },
        })
      } catch (err) {
        if (err instanceof SignInRefused) return signInFailed(request, err.reason, err.message)
        return signInFailed(
          request,
          `could not start: ${describe(err)}`,
          `Signing in with ${client.name} does not work right now: try again in a minute.`,
        )
      }
    })
    .get(`${PATH}/callback`, async ({ request }) => {
      const query = new URL(request.url).searchParams
      try {
        const { claims, next } = await client.finish({ query, binding: cookiesOf(request).get(BINDING_COOKIE) ?? '' })
        const linked = await people.link(claims, clientIp(request))
        if (!linked.ok)
          return signInFailed(
            request,
            `account ${linked.name} is disabled`,
            'This account has been disabled by an administrator.',
          )
        return await signInSucceeded(request, linked, next)
      } catch (err) {
        if (err instanceof SignInRefused) return signInFailed(request, err.reason, err.message)
        return signInFailed(
          request,
          `callback failed: ${describe(err)}`,
          `Signing in with ${client.name} did not work: start again.`,
        )
      }
    })
    .get(`${PATH}/logout`, async () => {
      const url = await client.endSessionUrl()
      if (!url)
        return shell.seeOther('/login', {
          kind: 'warn',
          text: `${client.name} offers no sign-out page: sign out there yourself if you mean to.`,
        })
      return new Response(null, { status: 303, headers: { location: url, 'cache-control': 'no-store' } })
    })

  return {
    plugin: app,
    name: client.name,
    /** The button of the sign-in page, coming back to `next`. */
    button: (next: string) =>
      `<p class="sso"><a class="button sso-button" href="${PATH}?next=${escapeHtml(encodeURIComponent(next))}">Sign in with ${escapeHtml(client.name)}</a></p>`,
    /** Where sign-out goes: after an account linked to the provider, the sign-in page offers its sign-out. */
    signedOutPage: async (accountId: number) =>
      (await people.isLinked(accountId)) ? '/login?signed_out=provider' : '/login',
    /** The offer the sign-in page shows after such a sign-out. */
    signOutOffer: () =>
      `<p class="sso-signout">Still signed in at ${escapeHtml(client.name)}? <a href="${PATH}/logout">Also sign out of ${escapeHtml(client.name)}</a>.</p>`,
  }
}
export type OidcSignIn = ReturnType<typeof createOidcSignIn>
