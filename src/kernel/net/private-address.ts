// The refusal of a URL that leads to a private or local network address: media and webhooks answer the same.
import { AppError } from '../errors'

export function privateAddress() {
  return new AppError(
    400,
    'private_address',
    'The parameter "url" leads to a private or local network address, which this service does not fetch.',
  )
}
