// The accounts feature's public face (the re-exports links needs; the lead unions this file at merge).
export { randomBase62 } from './service'
export { ACCOUNT_TOPIC } from './storage'
