// Single sign-on with an OpenID provider (SPEC §7) through openid-client, imported at the first sign-in (about
// 50 ms to load, which a start-up need not pay). Design notes: ARCHITECTURE (oidc).
import { randomBytes } from 'node:crypto'
import type * as OidcLib from 'openid-client'
import type { Config } from '../kernel/config'
import { sameSecret } from '../web/api'

export const PENDING_TTL_MS = 10 * 60_000
export const PENDING_MAX = 10_000
/** Seconds a provider's clock may be ahead of or behind ours when the ID token's times are checked. */
export const CLOCK_TOLERANCE_S = 60
/** After a failed discovery, the next sign-in asks again after this long (before: the same answer at once). */
export const DISCOVERY_RETRY_MS = 10_000
/** Seconds each request to the provider may take. */
export const PROVIDER_TIMEOUT_S = 10
/** A sign-in's start asks the provider whether it is up (its discovery document) within this long. */
export const REACH_TIMEOUT_MS = 2500
/** ...and that answer serves the starts of this long after it (one request, however many click at once). */
export const REACH_REUSE_MS = 2000

/** The URL the provider sends the browser back to: register exactly this at the provider. */
export const redirectUriOf = (baseUrl: string) => `${baseUrl}/login/oidc/callback`
/** Where the provider's sign-out sends the browser back to: the base URL. */
export const postLogoutUriOf = (baseUrl: string) => `${baseUrl}/`

/**
 * A sign-in that did not work: `reason` is the technical cause (for the log, never shown), `message` the
 * sentence the sign-in page shows.
 */
export class SignInRefused extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message)
    this.name = 'SignInRefused'
  }
}

interface Pending {
  binding: string
  verifier: string
  nonce: string
  next: string
  expires: number
}

/** What a started sign-in keeps for its callback. */
export type PendingEntry = Pick<Pending, 'verifier' | 'nonce' | 'next'>

/** Where started sign-ins wait for their callback. */
export interface PendingSignIns {
  put(state: string, binding: string, entry: PendingEntry, ttlMs: number): Promise<void>
  /** The entry of `state` whoever's it is, once (then gone); `mine`: started with this binding. Null: none. */
  take(state: string, binding: string): Promise<{ entry: PendingEntry | null; mine: boolean; expired: boolean } | null>
  /** Entries held (the in-memory store's; tests and bounds). */
  readonly size?: number
}

/** Started sign-ins in this process's memory (a client made without `pending`). */
export function memoryPendingSignIns(clock: () => number): PendingSignIns {
  const pending = new Map<string, Pending>()
  return {
    async put(state, binding, entry, ttlMs) {
      const now = clock()
      for (const [s, p] of pending) {
        if (p.expires > now) break // in insertion order, which is expiry order
        pending.delete(s)
      }
      while (pending.size >= PENDING_MAX) pending.delete(pending.keys().next().value!)
      pending.set(state, { binding, ...entry, expires: now + ttlMs })
    },
    async take(state, binding) {
      const p = pending.get(state)
      if (!p) return null
      pending.delete(state)
      const mine = !!binding && sameSecret(binding, p.binding)
      return { entry: mine ? p : null, mine, expired: p.expires <= clock() }
    },
    get size() {
      return pending.size
    },
  }
}

/** Claims of a finished sign-in: the ID token's, completed by the UserInfo answer (same `sub`). */
export interface SignedInClaims {
  sub: string
  preferred_username?: unknown
  email?: unknown
  groups?: unknown
}

/** The technical side of an error, in one line for the log (no stack). */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const e = err as Error & { code?: string; error?: string; error_description?: string; cause?: unknown }
  const parts = [e.name, e.code, e.error, e.error_description, e.message].filter((p) => typeof p === 'string' && p)
  const cause = e.cause instanceof Error ? `; cause: ${e.cause.message}` : ''
  return [...new Set(parts)].join(': ') + cause
}

export function createOidcClient(deps: {
  oidc: Config['oidc']
  baseUrl: string
  clock: () => number
  pending?: PendingSignIns
}) {
  const { clock } = deps
  const settings = deps.oidc
  const name = settings.name
  const redirectUri = redirectUriOf(deps.baseUrl)
  const pending = deps.pending ?? memoryPendingSignIns(clock)
  let discovered: Promise<{ oidc: typeof OidcLib; config: OidcLib.Configuration }> | null = null
  let failure: { at: number; reason: string } | null = null

  async function discover(): Promise<{ oidc: typeof OidcLib; config: OidcLib.Configuration }> {
    const oidc = await import('openid-client')
    const server = new URL(settings.issuer)
    const insecure = server.protocol === 'http:' // config.ts allows it on loopback only
    const metadata = { client_secret: settings.client_secret, [oidc.clockTolerance]: CLOCK_TOLERANCE_S }
    const found = await oidc.discovery(
      server,
      settings.client_id,
      metadata,
      oidc.ClientSecretBasic(settings.client_secret),
      {
        execute: insecure ? [oidc.allowInsecureRequests] : [],
        timeout: PROVIDER_TIMEOUT_S,
      },
    )
    // client_secret_basic unless the provider says it only takes the secret in the form (client_secret_post).
    const serverMetadata = found.serverMetadata()
    const methods = serverMetadata.token_endpoint_auth_methods_supported
    const auth =
      methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
        ? oidc.ClientSecretPost(settings.client_secret)
        : oidc.ClientSecretBasic(settings.client_secret)
    const config = new oidc.Configuration(serverMetadata, settings.client_id, metadata, auth)
    if (insecure) oidc.allowInsecureRequests(config)
    config.timeout = PROVIDER_TIMEOUT_S
    oidc.enableNonRepudiationChecks(config)
    return { oidc, config }
  }

  /** The provider's configuration: discovered once; after a failure, asked again DISCOVERY_RETRY_MS later. */
  function configuration(): Promise<{ oidc: typeof OidcLib; config: OidcLib.Configuration }> {
    if (discovered) return discovered
    if (failure && clock() - failure.at < DISCOVERY_RETRY_MS)
      return Promise.reject(
        new SignInRefused(
          `discovery failed ${Math.round((clock() - failure.at) / 1000)} s ago: ${failure.reason}`,
          unreachable(),
        ),
      )
    const attempt = discover().catch((err) => {
      if (discovered === attempt) discovered = null
      failure = { at: clock(), reason: describe(err) }
      throw new SignInRefused(`discovery of ${settings.issuer} failed: ${failure.reason}`, unreachable())
    })
    discovered = attempt
    return attempt
  }

  // A provider that went down after its discovery: the browser is not sent to it, the sign-in page says so.
  // Any answer below 500 is a provider that is up (a 5xx is its proxy saying it is not).
  let reach: { at: number; check: Promise<string | null> } | null = null
  function reachable(): Promise<void> {
    if (!reach || clock() - reach.at >= REACH_REUSE_MS) {
      const url = `${settings.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
      const check = fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(REACH_TIMEOUT_MS) })
        .then(async (r) => {
          await r.body?.cancel()
          return r.status < 500 ? null : `answered ${r.status}`
        })
        .catch((err: unknown) => describe(err))
      reach = { at: clock(), check }
    }
    return reach.check.then((why) => {
      if (why !== null) throw new SignInRefused(`provider unreachable at sign-in start: ${why}`, unreachable())
    })
  }

  const unreachable = () =>
    `${name} cannot be reached right now, so signing in with it does not work: try again in a minute, or ask the administrator.`
  const startAgain = (what: string) => `${what} Start again with “Sign in with ${name}”.`

  return {
    name,
    redirectUri,

    /**
     * Starts a sign-in: the provider's authorization URL, and the browser binding to put in its cookie
     * (`binding` given: the one the browser has already, so that two tabs can sign in at once).
     */
    async start(opts: { next: string; binding?: string }): Promise<{ url: string; binding: string }> {
      const { oidc, config } = await configuration()
      await reachable()
      const binding =
        opts.binding && /^[A-Za-z0-9_-]{32,64}$/.test(opts.binding)
          ? opts.binding
          : randomBytes(32).toString('base64url')
      const state = oidc.randomState()
      const nonce = oidc.randomNonce()
      const verifier = oidc.randomPKCECodeVerifier()
      await pending.put(state, binding, { verifier, nonce, next: opts.next }, PENDING_TTL_MS)
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: settings.scopes,
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      })
      return { url: url.href, binding }
    },

    /**
     * The callback: checks the answer (an error from the provider, the state, its browser), redeems the
     * code and checks the ID token, then completes the claims from UserInfo. Throws SignInRefused.
     */
    async finish(opts: { query: URLSearchParams; binding: string }): Promise<{ claims: SignedInClaims; next: string }> {
      const { query } = opts
      const state = query.get('state') ?? ''
      const taken = state ? await pending.take(state, opts.binding) : null // once, whatever comes of it
      const error = query.get('error')
      if (error !== null) {
        const code = error.replace(/[^\x20-\x7e]/g, '?').slice(0, 64)
        const detail = (query.get('error_description') ?? '').replace(/[^\x20-\x7e]/g, '?').slice(0, 200)
        if (code === 'access_denied')
          throw new SignInRefused(
            `provider answered error=access_denied ${detail}`.trim(),
            startAgain(`Signing in with ${name} was cancelled or not allowed.`),
          )
        throw new SignInRefused(
          `provider answered error=${code} ${detail}`.trim(),
          startAgain(`${name} refused the sign-in.`),
        )
      }
      if (!state) throw new SignInRefused('callback without state', startAgain('That sign-in answer is incomplete.'))
      if (!taken || taken.expired)
        throw new SignInRefused(
          taken ? 'state expired' : 'state unknown (used already, expired, or made up)',
          startAgain('That sign-in was used already or has expired.'),
        )
      const entry = taken.entry
      if (!taken.mine || !entry)
        throw new SignInRefused(
          'state belongs to another browser (the binding cookie is missing or different)',
          startAgain('That sign-in was started in another browser.'),
        )
      const { oidc, config } = await configuration()
      const current = new URL(redirectUri)
      current.search = query.toString()
      let tokens: Awaited<ReturnType<typeof OidcLib.authorizationCodeGrant>>
      try {
        tokens = await oidc.authorizationCodeGrant(config, current, {
          pkceCodeVerifier: entry.verifier,
          expectedState: state,
          expectedNonce: entry.nonce,
          idTokenExpected: true,
        })
      } catch (err) {
        throw new SignInRefused(
          `code exchange or ID token check failed: ${describe(err)}`,
          startAgain(`The answer from ${name} could not be checked, so you are not signed in.`),
        )
      }
      const idClaims = tokens.claims()
      if (!idClaims || typeof idClaims.sub !== 'string' || !idClaims.sub)
        throw new SignInRefused(
          'no ID token subject',
          startAgain(`The answer from ${name} could not be checked, so you are not signed in.`),
        )
      let claims: SignedInClaims = { ...idClaims, sub: idClaims.sub }
      // Many providers (Authelia by default) put only `sub` in the ID token: the rest is in UserInfo.
      const missing =
        claims.preferred_username === undefined || (claims.groups === undefined && settings.admin_groups.length > 0)
      if (missing && config.serverMetadata().userinfo_endpoint && tokens.access_token) {
        try {
          const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)
          claims = {
            ...info,
            ...claims,
            preferred_username: claims.preferred_username ?? info.preferred_username,
            groups: claims.groups ?? info.groups,
          }
        } catch (err) {
          throw new SignInRefused(`UserInfo failed: ${describe(err)}`, startAgain(`${name} did not say who you are.`))
        }
      }
      return { claims, next: entry.next }
    },

    /**
     * Where to send the browser to sign out of the provider too (its end_session_endpoint, with client_id
     * and the base URL to come back to), or null when it has none or cannot be reached.
     */
    async endSessionUrl(): Promise<string | null> {
      try {
        const { oidc, config } = await configuration()
        if (!config.serverMetadata().end_session_endpoint) return null
        return oidc.buildEndSessionUrl(config, {
          client_id: settings.client_id,
          post_logout_redirect_uri: postLogoutUriOf(deps.baseUrl),
        }).href
      } catch {
        return null
      }
    },

    /** Started sign-ins waiting for their callback (tests and bounds). */
    get pending() {
      return pending.size ?? -1
    },
  }
}
export type OidcClient = ReturnType<typeof createOidcClient>
