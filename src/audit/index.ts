// The audit feature's public face (the re-exports abuse needs; the lead unions this file at merge).
export { auditRow, SYSTEM, type AuditEntry, type Who } from './service'
export type { AuditRows } from './storage'
