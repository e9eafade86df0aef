// The QR feature's public face (minimal: what the dashboard needs; issue 37).
export { LOGO_MAX_BYTES } from './logo'
export { callerLane } from './renderer'
export { parseQrSettings, QR_ECC_LEVELS, QR_MARGIN, QR_SIZE } from './service'
export type { QrFormat, QrService } from './service'
