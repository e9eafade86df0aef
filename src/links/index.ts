// The links feature's public face: what app/, cli/, other features and tests reach links by.
export type { LinkChanges, LinkRow, LinkStorage, NewLink } from './storage/contract'
