// One error type for the whole service: an HTTP status, a stable machine code and a human message that
// names the parameter or cause. Services throw these; the HTTP layer renders them into the envelope.
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'AppError'
  }
}

/** The database (PostgreSQL) cannot be reached: a write is refused until it can (db/health.ts). */
export const databaseUnavailable = () =>
  new AppError(503, 'storage_unavailable', 'The database cannot be reached right now. Try again in a few seconds.', {
    'retry-after': '5',
  })

export const badRequest = (code: string, message: string) => new AppError(400, code, message)
export const missingParameter = (name: string) =>
  new AppError(400, 'missing_parameter', `The parameter "${name}" is required.`)
export const invalidParameter = (name: string, rule: string) =>
  new AppError(400, 'invalid_parameter', `The parameter "${name}" is invalid: ${rule}.`)
export const notFound = (message = 'Not found.') => new AppError(404, 'not_found', message)
export const missingKey = () =>
  new AppError(401, 'missing_key', 'This method needs an API key: send it in the X-Api-Key header.')
export const invalidKey = () => new AppError(401, 'invalid_key', 'The API key is unknown or has been revoked.')
export const scopeDenied = (scope: string) =>
  new AppError(403, 'scope_denied', `The API key does not have the "${scope}" scope.`)
export const notOwner = (what = 'link') => new AppError(403, 'not_owner', `This ${what} belongs to another account.`)
export const tooLarge = (limit: number) =>
  new AppError(413, 'too_large', `The request body is larger than the limit of ${limit} bytes.`)
export const rateLimited = (retryAfter: number) =>
  new AppError(429, 'rate_limited', `Too many requests: try again in ${retryAfter} s.`, {
    'Retry-After': String(retryAfter),
  })
export const internalError = () => new AppError(500, 'internal', 'Internal error: the request could not be completed.')

/** A configuration or command-line problem: printed as is, stops the program. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}
