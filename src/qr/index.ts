// The QR feature's public face: the service and renderer types, and the settings the dashboard's form uses.
export { LOGO_MAX_BYTES } from './logo'
export { callerLane, type QrRenderer } from './renderer'
export { parseQrSettings, QR_ECC_LEVELS, QR_MARGIN, QR_SIZE, type QrFormat, type QrService } from './service'
