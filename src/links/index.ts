// The links feature's public face.
export type { LinkService } from './service'
export { MAX_URL_LENGTH } from './validate'
