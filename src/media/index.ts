// The media feature's public face: its service, its storage contract and the yt-dlp it runs.
export type { MediaFeatureDeps } from './feature'
export type { MediaHistory, StartedDownload } from './history'
export type { MediaService } from './service'
export type { TicketInput, TicketRow, TicketStorage } from './storage/contract'
export type { CookieSiteRow, CookieStorage } from './storage/cookies-contract'
export { cookieKey, createCookieJar, CookiesError, type AddedCookies, type CookieJar } from './cookies'
export {
  createYtdlp,
  embeddedYtdlp,
  isSafeYtdlpVersion,
  MIN_YTDLP_VERSION,
  unsafeYtdlpReason,
  updateYtdlp,
  YtdlpUpdateError,
  type Ytdlp,
} from './ytdlp'
