// The abuse feature's public face (minimal: what the dashboard needs; issue 37).
export type { AbuseService } from './service'
export type { OpenReport } from './store'
