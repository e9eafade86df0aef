export { auditRow, byAccount, SYSTEM, webhookTarget, type AuditEntry, type Who } from './service'
export type { AuditRows } from './storage'
