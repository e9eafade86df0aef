// The audit log's public face (minimal: what the dashboard needs; issue 37).
export { ACTIONS, accountTarget, actorText, auditRow, byAccount, createAuditReader } from './service'
export type { AuditFilter, AuditPage, AuditReader, Who } from './service'
export type { AuditRow, AuditRows } from './storage'
