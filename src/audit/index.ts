// The audit log's public face: who did what (the rows' helpers and reader) and its storage contract.
export {
  accountTarget,
  ACTIONS,
  actorText,
  AUDIT_PAGE_DEFAULT,
  AUDIT_PAGE_MAX,
  auditJson,
  auditRow,
  byAccount,
  CLI,
  createAuditReader,
  dayStart,
  keyTarget,
  SYSTEM,
  webhookTarget,
} from './service'
export type { Action, Actor, AuditEntry, AuditFilter, AuditPage, AuditReader, Who } from './service'
export type { ActorKind, AuditInsert, AuditQuery, AuditRow, AuditRows } from './storage/contract'
